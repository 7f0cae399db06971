// SPDX-License-Identifier: Apache-2.0
internal import CCurl
import Foundation
import Synchronization

/// libcurl's global state must be set up once, before any other thread uses libcurl.
private let curlGlobalInitialization: CURLcode = curl_global_init(Int(CURL_GLOBAL_DEFAULT))

/// One libcurl multi handle driven by one dedicated thread: every transfer of a client runs here,
/// so the cooperative thread pool never blocks and there is no thread per request.
///
/// Other threads talk to the loop only through `inbox` (under a mutex) and `curl_multi_wakeup`;
/// everything else, including every easy handle, belongs to the loop thread. Transfers share the
/// multi handle's connection cache, which is what makes keep-alive work.
final class CurlMultiLoop: Sendable {
    private struct Inbox {
        var submissions: [CurlTransfer] = []
        var cancellations: [CurlTransfer] = []
        var closing = false
        var finished = false
        /// Set by the loop, under the lock, when it saw an empty inbox and is about to sleep in
        /// `curl_multi_poll`; only then does a newcomer need to wake it.
        var sleeping = false
        var shutdownWaiters: [CheckedContinuation<Void, Never>] = []
    }

    /// `@unchecked Sendable`: the pointer crosses threads only for `curl_multi_wakeup`, which libcurl
    /// documents as callable from any thread; all other uses are on the loop thread.
    private struct MultiHandle: @unchecked Sendable {
        let pointer: UnsafeMutableRawPointer
    }

    private let multi: MultiHandle
    private let inbox = Mutex(Inbox())
    private let configuration: HTTPClient.Configuration

    /// Idle easy handles kept for reuse; `curl_easy_reset` keeps their allocations warm.
    private static let maxIdleEasyHandles = 256
    /// The watchdog looks at running transfers at least this often.
    private static let watchdogInterval: Duration = .milliseconds(250)

    init(configuration: HTTPClient.Configuration) throws(HTTPClientError) {
        guard curlGlobalInitialization == CURLE_OK, let multi = curl_multi_init() else {
            throw HTTPClientError.internalFailure.with(mayHaveBeenDelivered: false, detail: "libcurl initialization failed")
        }
        _ = wxpay_curl_multi_setopt_long(multi, CURLMOPT_MAXCONNECTS, max(1, configuration.connectionCacheSize))
        self.multi = MultiHandle(pointer: multi)
        self.configuration = configuration
        let thread = Thread { [self] in run() }
        thread.name = "wxpay-curl"
        thread.start()
    }

    /// Whether `close` was called.
    var isClosing: Bool { inbox.withLock { $0.closing } }

    /// Hands a transfer to the loop; a closed loop fails it at once.
    func submit(_ transfer: CurlTransfer) {
        let accepted = inbox.withLock { inbox in
            guard !inbox.closing else { return false }
            inbox.submissions.append(transfer)
            Self.wakeIfSleeping(&inbox, multi)
            return true
        }
        if !accepted { transfer.complete(.failure(.shutDown)) }
    }

    /// Asks the loop to remove a transfer; `transfer.cancelled` must already be set.
    func cancel(_ transfer: CurlTransfer) {
        inbox.withLock { inbox in
            guard !inbox.closing else { return }
            inbox.cancellations.append(transfer)
            Self.wakeIfSleeping(&inbox, multi)
        }
    }

    /// Fails every pending transfer with ``HTTPClientError/shutDown`` and stops the thread;
    /// returns once the thread has released libcurl.
    func close() async {
        await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
            let resumeNow = inbox.withLock { inbox in
                if inbox.finished { return true }
                inbox.shutdownWaiters.append(waiter)
                requestCloseLocked(&inbox)
                return false
            }
            if resumeNow { waiter.resume() }
        }
    }

    /// Starts closing without waiting (for `deinit`).
    func requestClose() {
        inbox.withLock { requestCloseLocked(&$0) }
    }

    /// A busy loop picks new work up before it sleeps, so only a sleeping loop is woken, and only
    /// once: this keeps a write to libcurl's wake-up pipe off most requests.
    private static func wakeIfSleeping(_ inbox: inout Inbox, _ multi: MultiHandle) {
        guard inbox.sleeping else { return }
        inbox.sleeping = false
        _ = curl_multi_wakeup(multi.pointer)
    }

    private func requestCloseLocked(_ inbox: inout Inbox) {
        guard !inbox.closing else { return }
        inbox.closing = true
        _ = curl_multi_wakeup(multi.pointer)
    }

    // MARK: The loop thread

    private func run() {
        var active: [UnsafeMutableRawPointer: CurlTransfer] = [:]
        var idleHandles: [UnsafeMutableRawPointer] = []
        var submissions: [CurlTransfer] = []
        var cancellations: [CurlTransfer] = []
        var nextWatchdogScan = ContinuousClock.now + Self.watchdogInterval

        func finish(_ transfer: CurlTransfer, _ easy: UnsafeMutableRawPointer, _ outcome: (TransferProgress) -> Result<HTTPClientResponse, HTTPClientError>) {
            active[easy] = nil
            _ = curl_multi_remove_handle(multi.pointer, easy)
            let result = outcome(transfer.progress(of: easy))
            transfer.releaseHandle()
            curl_easy_reset(easy)
            if idleHandles.count < Self.maxIdleEasyHandles { idleHandles.append(easy) } else { curl_easy_cleanup(easy) }
            transfer.complete(result)
        }

        func start(_ transfer: CurlTransfer) {
            guard !transfer.isCancelled else {
                transfer.complete(.failure(.cancelled))
                return
            }
            guard let easy = idleHandles.popLast() ?? curl_easy_init() else {
                transfer.complete(.failure(HTTPClientError.internalFailure.with(mayHaveBeenDelivered: false)))
                return
            }
            let configured = transfer.configure(easy)
            let added = configured == CURLE_OK ? curl_multi_add_handle(multi.pointer, easy) : CURLM_OK
            guard configured == CURLE_OK, added == CURLM_OK else {
                transfer.releaseHandle()
                curl_easy_reset(easy)
                idleHandles.append(easy)
                let code = configured != CURLE_OK ? "curl code \(configured.rawValue)" : "multi code \(added.rawValue)"
                transfer.complete(.failure(HTTPClientError.internalFailure.with(mayHaveBeenDelivered: false, detail: code)))
                return
            }
            active[easy] = transfer
            nextWatchdogScan = min(nextWatchdogScan, transfer.deadline)
        }

        while true {
            let closing = inbox.withLock { inbox in
                inbox.sleeping = false
                swap(&submissions, &inbox.submissions)
                swap(&cancellations, &inbox.cancellations)
                return inbox.closing
            }
            for transfer in submissions { start(transfer) }
            submissions.removeAll(keepingCapacity: true)
            for transfer in cancellations {
                guard let easy = transfer.easy, active[easy] === transfer else { continue }
                finish(transfer, easy) { .failure(HTTPClientError.cancelled.with(mayHaveBeenDelivered: $0.requestBytesSent > 0)) }
            }
            cancellations.removeAll(keepingCapacity: true)
            if closing { break }

            var running: Int32 = 0
            _ = curl_multi_perform(multi.pointer, &running)
            var queued: Int32 = 0
            while let message = curl_multi_info_read(multi.pointer, &queued) {
                guard message.pointee.msg == CURLMSG_DONE, let easy = message.pointee.easy_handle,
                      let transfer = active[easy] else { continue }
                let code = wxpay_curl_msg_result(message)
                finish(transfer, easy) { progress in
                    code == CURLE_OK
                        ? .success(transfer.takeResponse(from: easy))
                        : .failure(.fromCurl(code, progress: progress, message: transfer.curlMessage))
                }
            }

            let now = ContinuousClock.now
            if now >= nextWatchdogScan {
                nextWatchdogScan = now + Self.watchdogInterval
                // Backstop for libcurl's own timeouts: nothing outlives its deadline by much.
                for (easy, transfer) in active where transfer.deadline <= now {
                    finish(transfer, easy) { progress in
                        .failure(.fromCurl(CURLE_OPERATION_TIMEDOUT, progress: progress,
                                           message: "watchdog: transfer outlived its total timeout"))
                    }
                }
                for transfer in active.values { nextWatchdogScan = min(nextWatchdogScan, transfer.deadline) }
            }
            let wait = active.isEmpty ? configuration.idleSleep : max(.zero, nextWatchdogScan - .now)
            let maySleep = inbox.withLock { inbox in
                guard inbox.submissions.isEmpty, inbox.cancellations.isEmpty, !inbox.closing else { return false }
                inbox.sleeping = true
                return true
            }
            // Without new work pending, sleep until a socket, a libcurl timer, the watchdog or a
            // wake-up; with work pending, only collect what is ready.
            let milliseconds = maySleep ? Int32(clamping: min(wait, configuration.idleSleep).curlMilliseconds) : 0
            _ = curl_multi_poll(multi.pointer, nil, 0, milliseconds, nil)
        }

        for (easy, transfer) in active {
            finish(transfer, easy) { .failure(HTTPClientError.shutDown.with(mayHaveBeenDelivered: $0.requestBytesSent > 0)) }
        }
        for easy in idleHandles { curl_easy_cleanup(easy) }
        // No wake-up can race with the cleanup: `closing` stops every caller from calling it.
        _ = curl_multi_cleanup(multi.pointer)
        let waiters = inbox.withLock { inbox in
            inbox.finished = true
            let leftovers = inbox.submissions
            inbox.submissions = []
            inbox.cancellations = []
            return (inbox.shutdownWaiters, leftovers)
        }
        for transfer in waiters.1 { transfer.complete(.failure(.shutDown)) }
        for waiter in waiters.0 { waiter.resume() }
    }
}
