// SPDX-License-Identifier: Apache-2.0

extension GatewayConfiguration {
    /// The fulfilment webhook: where `order.paid` events go, how they are signed, and how failed
    /// deliveries are retried (see `FulfilmentDispatcher`).
    public struct Fulfilment: Sendable, Hashable {
        /// Where events are POSTed (GATEWAY_FULFILMENT_URL); nil turns the dispatcher off.
        public var url: String?
        /// The HMAC-SHA256 key of `Gateway-Signature` (GATEWAY_FULFILMENT_SECRET), required with the URL.
        public var secret: String?
        /// The first retry's delay in seconds (GATEWAY_FULFILMENT_RETRY_MIN, default 5); each later
        /// one doubles, up to `retryMax` (GATEWAY_FULFILMENT_RETRY_MAX, default 3600).
        public var retryMin = 5.0
        public var retryMax = 3600.0
        /// Seconds without a 2xx after which an event is dead-lettered until support redrives it
        /// (GATEWAY_FULFILMENT_DEAD_AFTER, default 86400).
        public var deadAfter = 86400.0
    }

    static let fulfilmentVariables: [ConfigurationVariable] = [
        .optional("GATEWAY_FULFILMENT_URL", \.fulfilment.url, expecting: "an http(s) URL",
                  parse: ConfigurationVariable.url(userinfo: true)),
        .optional("GATEWAY_FULFILMENT_SECRET", \.fulfilment.secret, expecting: "at least 16 characters") {
            $0.utf8.count >= 16 ? $0 : nil
        },
        ConfigurationVariable("GATEWAY_FULFILMENT_RETRY_MIN", \.fulfilment.retryMin, expecting: "seconds from 0.1 to 86400",
                              parse: ConfigurationVariable.seconds(0.1...86400)),
        ConfigurationVariable("GATEWAY_FULFILMENT_RETRY_MAX", \.fulfilment.retryMax, expecting: "seconds from 0.1 to 604800",
                              parse: ConfigurationVariable.seconds(0.1...604_800)),
        ConfigurationVariable("GATEWAY_FULFILMENT_DEAD_AFTER", \.fulfilment.deadAfter,
                              expecting: "seconds from 1 to 2592000 (30 days)",
                              parse: ConfigurationVariable.seconds(1...2_592_000)),
    ]

    /// A URL needs its secret (an unsigned webhook could be forged by anyone who finds the
    /// receiver), and the backoff must grow from its minimum to its maximum.
    static func fulfilmentChecks(_ configuration: GatewayConfiguration, _ environment: Environment) -> [ConfigurationProblem] {
        let fulfilment = configuration.fulfilment
        var problems: [ConfigurationProblem] = []
        if fulfilment.url != nil && fulfilment.secret == nil && environment.get("GATEWAY_FULFILMENT_SECRET") == nil {
            problems.append(ConfigurationProblem("GATEWAY_FULFILMENT_SECRET", .conflict,
                                                 expected: "required with GATEWAY_FULFILMENT_URL (at least 16 characters)"))
        }
        if fulfilment.retryMax < fulfilment.retryMin {
            problems.append(ConfigurationProblem("GATEWAY_FULFILMENT_RETRY_MAX", .conflict,
                                                 expected: "must not be less than GATEWAY_FULFILMENT_RETRY_MIN"))
        }
        return problems
    }
}
