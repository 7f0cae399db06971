// SPDX-License-Identifier: Apache-2.0
import HTTP

extension HTTPServerConfiguration {
    /// The defaults with idle and request timeouts of five minutes, for servers in tests that are
    /// not about timeouts. At load 18, and in CI at load 60+, the gap between two requests on one
    /// keep-alive connection passed the default 15 s: the server rightly closed the connection,
    /// and a client that sent on it as it closed failed (`receiveFailed`).
    public static var patient: HTTPServerConfiguration {
        HTTPServerConfiguration().with {
            $0.connectionTimeout = .seconds(300)
            $0.requestTimeout = .seconds(300)
        }
    }
}
