// SPDX-License-Identifier: Apache-2.0
import WeChatPayV3

/// v3's control panel as calls, for tests and demo mode in process (the HTTP routes are
/// `/simulator/v3/…`, `SimulatorControlAPI`).
extension WeChatPaySimulator {
    /// The platform certificates served at `/v3/certificates` (empty in public-key mode or without v3).
    public var v3PlatformCertificates: [PlatformCertificate] { v3?.platformCertificates ?? [] }

    /// Issues a new platform certificate that signs from now on, the old one kept; its serial, or
    /// nil without certificate mode.
    public func rotateV3Certificate() -> String? {
        guard let v3, v3.configuration.platformCertificates else { return nil }
        return v3.rotate(now: clock.now())
    }

    /// Which key signs notifies from now on (`PUB_KEY_ID_…` or a platform certificate's serial);
    /// false when it names none of WeChat's keys.
    public func setV3NotifySerial(_ serial: String) -> Bool { v3?.setNotifySerial(serial) ?? false }
}
