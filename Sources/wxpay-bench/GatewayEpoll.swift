// SPDX-License-Identifier: Apache-2.0
import Glibc

/// The three epoll calls the load generator needs. Swift's Glibc module does not include
/// sys/epoll.h, and the bench owns no C shim, so the symbols are bound by name: their C
/// signatures take only integers and a pointer, which Swift passes the C way. With `poll` over
/// 128 sockets the kernel's per-call scan and wait-queue setup was about a third of the
/// generator's CPU.
enum GatewayEpoll {
    static let input: UInt32 = 0x001  // EPOLLIN
    static let output: UInt32 = 0x004  // EPOLLOUT
    static let error: UInt32 = 0x008  // EPOLLERR
    static let hangUp: UInt32 = 0x010  // EPOLLHUP
    private static let add: Int32 = 1, modify: Int32 = 3  // EPOLL_CTL_ADD, EPOLL_CTL_MOD
    private static let closeOnExec: Int32 = 0o2000000  // EPOLL_CLOEXEC (= O_CLOEXEC)

    /// `struct epoll_event`: packed (12 bytes) on x86-64, naturally aligned (16) elsewhere.
    #if arch(x86_64)
    static let eventSize = 12
    private static let dataOffset = 4
    #else
    static let eventSize = 16
    private static let dataOffset = 8
    #endif

    static func create() -> Int32 { c_epoll_create1(closeOnExec) }

    static func add(_ poller: Int32, _ fd: Int32, events: UInt32, token: UInt64) -> Bool {
        control(poller, add, fd, events: events, token: token)
    }

    static func modify(_ poller: Int32, _ fd: Int32, events: UInt32, token: UInt64) -> Bool {
        control(poller, modify, fd, events: events, token: token)
    }

    /// Waits for events into `buffer` (room for `buffer.count / eventSize` of them).
    static func wait(_ poller: Int32, into buffer: UnsafeMutableRawBufferPointer, timeoutMilliseconds: Int32) -> Int32 {
        c_epoll_wait(poller, buffer.baseAddress!, Int32(buffer.count / eventSize), timeoutMilliseconds)
    }

    /// The events and token of entry `index` of a `wait` buffer.
    static func event(_ buffer: UnsafeMutableRawBufferPointer, _ index: Int) -> (events: UInt32, token: UInt64) {
        let base = index * eventSize
        return (buffer.loadUnaligned(fromByteOffset: base, as: UInt32.self),
                buffer.loadUnaligned(fromByteOffset: base + dataOffset, as: UInt64.self))
    }

    private static func control(_ poller: Int32, _ operation: Int32, _ fd: Int32, events: UInt32, token: UInt64) -> Bool {
        var event = [UInt8](repeating: 0, count: eventSize)
        return event.withUnsafeMutableBytes { bytes in
            bytes.storeBytes(of: events, toByteOffset: 0, as: UInt32.self)
            bytes.storeBytes(of: token, toByteOffset: dataOffset, as: UInt64.self)
            return c_epoll_ctl(poller, operation, fd, bytes.baseAddress!) == 0
        }
    }
}

@_silgen_name("epoll_create1")
private func c_epoll_create1(_ flags: Int32) -> Int32

@_silgen_name("epoll_ctl")
private func c_epoll_ctl(_ poller: Int32, _ operation: Int32, _ fd: Int32, _ event: UnsafeMutableRawPointer) -> Int32

@_silgen_name("epoll_wait")
private func c_epoll_wait(_ poller: Int32, _ events: UnsafeMutableRawPointer, _ count: Int32, _ timeout: Int32) -> Int32
