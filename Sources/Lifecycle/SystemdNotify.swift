// SPDX-License-Identifier: Apache-2.0
import Glibc

/// sd_notify's protocol, for a `Type=notify` systemd unit: one datagram of `NAME=value` lines to
/// the Unix socket `$NOTIFY_SOCKET` names (a leading `@`: Linux's abstract namespace). `serve` says
/// `READY=1` once it listens with its signals trapped, so `systemctl start` returns only then and
/// a `systemctl reload` queued behind it cannot reach the process before its SIGHUP is handled.
/// Without the variable (not run by systemd) it does nothing.
public enum SystemdNotify {
    /// Sends `state` (e.g. `READY=1`); whether the datagram went out. Never fails the caller: a
    /// unit that waits for it times out and says so in systemd's log.
    @discardableResult
    public static func send(_ state: String, socket path: String?) -> Bool {
        guard let path, !path.isEmpty else { return false }
        var name = Array(path.utf8)
        var address = sockaddr_un()
        guard name.count < MemoryLayout.size(ofValue: address.sun_path) else { return false }
        if name[0] == UInt8(ascii: "@") { name[0] = 0 }
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: name) }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + name.count)
        let descriptor = Glibc.socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        let message = Array(state.utf8)
        let sent = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                message.withUnsafeBytes { sendto(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL), socketAddress, length) }
            }
        }
        return sent == message.count
    }
}
