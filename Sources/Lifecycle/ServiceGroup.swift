// SPDX-License-Identifier: Apache-2.0
import Glibc
import Observability

/// Runs services as child tasks until a termination signal, `triggerGracefulShutdown()`, or one of
/// them ending, then stops them in the REVERSE of the order they were given: each is told to stop
/// (its graceful shutdown fires) and waited for before the one before it, so what was started
/// first (the work that needs the others, or that they need) stops last. After `gracePeriod` in
/// all, whatever still runs is cancelled; a second termination signal cancels at once.
///
/// `run` returns once every service has stopped; it throws the first failure (a service that threw,
/// or `ServiceGroupError.serviceFinishedEarly` for one that returned before it was asked to stop).
///
/// ```swift
/// let group = ServiceGroup(services: [reconciler, dispatcher, listener], logger: logger)
/// try await group.run()   // SIGTERM: the listener drains, then the dispatcher, then the reconciler
/// ```
///
/// Termination signals are trapped from the moment the group is made, so one that arrives before
/// `run` is not lost (`run` then stops at once); a program with a long start can trap them from its
/// first line instead and hand them to the group (`init(services:terminationSignals:…)` with a
/// `UnixSignals`).
public actor ServiceGroup {
    private let services: [any Service]
    private let gracePeriod: Duration
    private let logger: Logger
    private let events = Mailbox<Event>()
    /// The group's own trap, or the forwarding of signals trapped before it was made.
    private let trap: SignalTrap?
    private let handedOver: UnixSignals?
    private var started = false

    enum Event: Sendable {
        case signal(Int32)
        case requested
    }

    private enum Child: Sendable {
        case ended(Int, (any Error)?)
        case event(Event?)
        case deadline(passed: Bool)
    }

    /// - Parameters:
    ///   - services: in the order they start; they stop in the reverse order.
    ///   - terminationSignals: the signals that stop the group (default SIGTERM and SIGINT; none
    ///     for a group stopped only by `triggerGracefulShutdown`).
    ///   - gracePeriod: how long the services have, together, to stop before they are cancelled.
    public init(services: [any Service], terminationSignals: [Int32] = [SIGTERM, SIGINT],
                gracePeriod: Duration = .seconds(30), logger: Logger = .disabled) {
        self.services = services
        self.gracePeriod = gracePeriod
        self.logger = logger
        let events = events
        trap = SignalTrap(terminationSignals) { events.post(.signal($0)) }
        handedOver = nil
    }

    /// A group stopped by the signals `terminationSignals` catches, trapped before the group was
    /// made: those that came in the meantime stop `run` at once. The group cancels them when it
    /// has run.
    public init(services: [any Service], terminationSignals: UnixSignals,
                gracePeriod: Duration = .seconds(30), logger: Logger = .disabled) {
        self.services = services
        self.gracePeriod = gracePeriod
        self.logger = logger
        trap = nil
        handedOver = terminationSignals
        let events = events
        Task { for await number in terminationSignals { events.post(.signal(number)) } }
    }

    /// Stops the group as a termination signal would.
    public nonisolated func triggerGracefulShutdown() {
        events.post(.requested)
    }

    public func run() async throws {
        precondition(!started, "a service group runs once")
        started = true
        defer {
            trap?.cancel()
            handedOver?.cancel()
        }
        let (services, events, gracePeriod, logger) = (self.services, self.events, self.gracePeriod, self.logger)
        let triggers = services.map { _ in GracefulShutdownTrigger() }
        // Fired when the stop begins, before any service's own turn: `serviceGroupIsStopping()`.
        let stopping = GracefulShutdownTrigger()
        let failure = await withTaskGroup(of: Child.self) { group -> (any Error)? in
            for (index, service) in services.enumerated() {
                let trigger = triggers[index]
                group.addTask {
                    do {
                        try await GroupStop.$current.withValue(stopping) { try await trigger.run { try await service.run() } }
                        return .ended(index, nil)
                    } catch {
                        return .ended(index, error)
                    }
                }
            }
            group.addTask { .event(await events.next()) }
            var running = Set(services.indices)
            var failure: (any Error)?
            var listening = true

            // Until a reason to stop.
            switch await group.next()! {
            case .event(.signal(let number)?):
                listening = false
                logger.notice("shutting down", ["signal": String(number)])
            case .event(.requested?):
                listening = false
                logger.notice("shutting down", ["reason": "requested"])
            case .event(nil):
                // The task running the group was cancelled: so is every service already.
                listening = false
                logger.notice("shutting down", ["reason": "cancelled"])
            case .ended(let index, let error):
                running.remove(index)
                let reason = error ?? ServiceGroupError.serviceFinishedEarly(Self.name(services[index]))
                failure = reason
                logger.error("a service stopped; stopping the others",
                             ["service": Self.name(services[index]), "error": String(describing: reason)])
            case .deadline:
                preconditionFailure("no deadline before the shutdown")
            }

            stopping.trigger()
            // In reverse order, each told and waited for; the deadline for all of them together.
            group.addTask {
                do {
                    try await Task.sleep(for: gracePeriod)
                    return .deadline(passed: true)
                } catch {
                    return .deadline(passed: false)
                }
            }
            if !listening { group.addTask { .event(await events.next()) } }
            var cancelled = false
            func cancelAll(_ why: String) {
                guard !cancelled else { return }
                cancelled = true
                logger.warning(why, ["still_running": running.sorted().map { Self.name(services[$0]) }.joined(separator: ",")])
                group.cancelAll()
            }
            for index in services.indices.reversed() where running.contains(index) {
                triggers[index].trigger()
                while running.contains(index), let child = await group.next() {
                    switch child {
                    case .ended(let ended, let error):
                        running.remove(ended)
                        if let error, !(error is CancellationError), failure == nil {
                            failure = error
                            logger.error("a service failed while stopping",
                                         ["service": Self.name(services[ended]), "error": String(describing: error)])
                        }
                    case .deadline(passed: true):
                        cancelAll("the services did not stop within the grace period; cancelling them")
                    case .event(.signal?):
                        cancelAll("a second termination signal; cancelling the services")
                    case .event(.requested?):
                        if !cancelled { group.addTask { .event(await events.next()) } }
                    case .event(nil), .deadline(passed: false):
                        break
                    }
                }
            }
            // The timer and the listener.
            group.cancelAll()
            for await _ in group {}
            return failure
        }
        if let failure { throw failure }
    }

    private static func name(_ service: any Service) -> String {
        (service as? any CustomStringConvertible)?.description ?? String(describing: type(of: service))
    }
}

enum GroupStop {
    @TaskLocal static var current: GracefulShutdownTrigger?
}

/// Whether the service group running this task has begun to stop, though this service's own turn
/// may not have come (the services after it are still draining): a loop that starts work on its
/// own (a sweep, a scheduled run) should start no more. False outside a service group.
public func serviceGroupIsStopping() -> Bool {
    GroupStop.current?.isTriggered ?? false
}

/// Why a service group stopped other than by a signal or a request.
public struct ServiceGroupError: Error, Sendable, Hashable, CustomStringConvertible {
    public let service: String

    /// `service` returned before the group asked it to stop.
    public static func serviceFinishedEarly(_ service: String) -> ServiceGroupError { ServiceGroupError(service: service) }

    public var description: String { "the service \(service) stopped before it was asked to" }
}
