//! Payload digests of the messages a node takes and publishes, computed as `lockstep_trace` computes them:
//! the SHA-256 of the message's canonical CDR (rmw serializes it twice, over a buffer filled with zeros and
//! with 0xff, and `lockstep_trace::canonical_from_passes` keeps what rmw wrote, padding zeroed).

use std::cell::RefCell;
use std::ffi::c_void;

use r2r_rcl::*;

/// A serialization buffer, reused: rmw writes into it, grown by rcutils when a message needs more.
struct Buffer {
    array: rcutils_uint8_array_t,
}

impl Buffer {
    fn new() -> Option<Self> {
        // SAFETY: a zero-initialised array and the default allocator, as rcutils expects.
        unsafe {
            let mut array = rcutils_get_zero_initialized_uint8_array();
            let allocator = rcutils_get_default_allocator();
            (rcutils_uint8_array_init(&mut array, 4096, &allocator) == RCL_RET_OK as i32)
                .then_some(Self { array })
        }
    }

    /// Serialize `message` into the buffer filled with `byte` beforehand; the bytes rmw reports, borrowed.
    fn serialize(
        &mut self,
        message: *const c_void,
        ts: *const rosidl_message_type_support_t,
        byte: u8,
    ) -> Option<&[u8]> {
        // rmw grows a too-small buffer with realloc, leaving new bytes unfilled: serialize again then.
        for _ in 0..2 {
            let capacity = self.array.buffer_capacity;
            if !self.array.buffer.is_null() {
                // SAFETY: the buffer holds `buffer_capacity` bytes.
                unsafe { std::ptr::write_bytes(self.array.buffer, byte, capacity) };
            }
            // SAFETY: a message of the type support's type (the caller's contract) and an initialised array.
            let ret = unsafe { rmw_serialize(message, ts, &mut self.array) };
            if ret != RCL_RET_OK as i32 || self.array.buffer.is_null() {
                // SAFETY: resetting the thread's error state has no precondition.
                unsafe { rcutils_reset_error() };
                return None;
            }
            if self.array.buffer_capacity == capacity {
                // SAFETY: rmw wrote `buffer_length` bytes within the capacity.
                return Some(unsafe {
                    std::slice::from_raw_parts(self.array.buffer, self.array.buffer_length)
                });
            }
        }
        None
    }
}

impl Drop for Buffer {
    fn drop(&mut self) {
        // SAFETY: initialised by rcutils in `new`.
        unsafe { rcutils_uint8_array_fini(&mut self.array) };
    }
}

thread_local! {
    /// Per thread: the zero-filled pass and the 0xff-filled pass.
    static BUFFERS: RefCell<Option<(Buffer, Buffer)>> = const { RefCell::new(None) };
}

/// The digest of the message at `message` of type support `ts`; `None` when rmw cannot serialize it.
pub fn of_message(message: *const c_void, ts: *const rosidl_message_type_support_t) -> Option<u64> {
    if crate::skip().digest {
        return Some(0);
    }
    if message.is_null() || ts.is_null() {
        return None;
    }
    BUFFERS.with(|cell| {
        let mut cell = cell.try_borrow_mut().ok()?;
        if cell.is_none() {
            *cell = Some((Buffer::new()?, Buffer::new()?));
        }
        let (zeroed, filled) = cell.as_mut()?;
        let zeroed = zeroed.serialize(message, ts, 0x00)?;
        let filled = filled.serialize(message, ts, 0xff)?;
        let len = lockstep_trace::canonical_len(zeroed, filled);
        Some(lockstep_trace::digest(&zeroed[..len]))
    })
}

/// The digest of serialized bytes as they are (padding as the publisher left it).
pub fn of_bytes(message: *const rcl_serialized_message_t) -> Option<u64> {
    if crate::skip().digest {
        return Some(0);
    }
    // SAFETY: a serialized message handed to rcl holds `buffer_length` bytes at `buffer`.
    let message = unsafe { message.as_ref()? };
    if message.buffer.is_null() {
        return None;
    }
    // SAFETY: as above.
    let bytes = unsafe { std::slice::from_raw_parts(message.buffer, message.buffer_length) };
    Some(lockstep_trace::digest(bytes))
}

/// The serialized bytes of the message at `message` (type support `ts`), padding zeroed; `None` when rmw
/// cannot serialize it.
pub fn serialized(message: *const c_void, ts: *const rosidl_message_type_support_t) -> Option<Vec<u8>> {
    if message.is_null() || ts.is_null() {
        return None;
    }
    BUFFERS.with(|cell| {
        let mut cell = cell.try_borrow_mut().ok()?;
        if cell.is_none() {
            *cell = Some((Buffer::new()?, Buffer::new()?));
        }
        let (zeroed, _) = cell.as_mut()?;
        zeroed.serialize(message, ts, 0x00).map(<[u8]>::to_vec)
    })
}
