//! Canonical CDR bytes of a message, the input of its payload digest ([`lockstep_trace::digest`]): rmw
//! serializes it twice, over a buffer filled with zeros and with 0xff beforehand, and
//! [`lockstep_trace::canonical_from_passes`] keeps what rmw wrote, padding zeroed (its documentation says why).

use std::os::raw::c_void;

use lockstep_ros::RosContext as _;
use r2r::WrappedTypesupport;
use r2r_rcl::{
    rcutils_allocator_t, rcutils_get_default_allocator, rcutils_get_zero_initialized_uint8_array,
    rcutils_uint8_array_fini, rcutils_uint8_array_init, rcutils_uint8_array_t, rmw_serialize, RCL_RET_OK,
};

use crate::error::Result;

fn failed(what: &str, code: i32) -> crate::error::Error {
    lockstep_ros::Error::Ros {
        action: format!("{what} (canonical CDR)"),
        source: r2r::Error::from_rcl_error(code),
    }
    .into()
}

/// The CDR bytes of `msg` (encapsulation header included) with all alignment padding zeroed, ending with its
/// last field.
pub fn canonical_cdr<T: WrappedTypesupport>(msg: &T) -> Result<Vec<u8>> {
    // rmw_fastrtps has no size query; a first serialization tells the size.
    let size = msg
        .to_serialized_bytes()
        .ros_context("serializing a message")?
        .len();
    let mut buffer = CdrBuffer::with_capacity(size)?;
    with_native(msg, |native| buffer.serialize::<T>(native))
}

/// Run `f` on a native (C) copy of `msg`, destroyed afterwards.
fn with_native<T: WrappedTypesupport, R>(
    msg: &T,
    f: impl FnOnce(*const T::CStruct) -> Result<R>,
) -> Result<R> {
    let native = T::create_msg();
    if native.is_null() {
        return Err(failed(
            "allocating a native message",
            r2r_rcl::RCL_RET_BAD_ALLOC as i32,
        ));
    }
    // SAFETY: `native` is a valid, non-null message created for T's type support; it is destroyed once below.
    msg.copy_to_native(unsafe { &mut *native });
    let result = f(native);
    T::destroy_msg(native);
    result
}

/// A byte array rmw serializes into, finalised on drop.
struct CdrBuffer {
    array: rcutils_uint8_array_t,
}

impl CdrBuffer {
    fn with_capacity(capacity: usize) -> Result<Self> {
        // SAFETY: rcutils' default allocator is always valid.
        Self::with_allocator(capacity, unsafe { rcutils_get_default_allocator() })
    }

    /// A buffer whose bytes come from `allocator` (rmw grows the buffer through it too).
    fn with_allocator(capacity: usize, allocator: rcutils_allocator_t) -> Result<Self> {
        // SAFETY: a zero-initialised array is what rcutils_uint8_array_init expects; on success it owns
        // `capacity` bytes, released once by Drop.
        unsafe {
            let mut array = rcutils_get_zero_initialized_uint8_array();
            let ret = rcutils_uint8_array_init(&mut array, capacity.max(1), &allocator);
            if ret != RCL_RET_OK as i32 {
                return Err(failed("allocating a serialization buffer", ret));
            }
            Ok(Self { array })
        }
    }

    /// Set every byte of the whole capacity to `byte` (zero before serializing; garbage in tests).
    fn fill(&mut self, byte: u8) {
        if !self.array.buffer.is_null() {
            // SAFETY: `buffer` holds `buffer_capacity` bytes owned by this array.
            unsafe { std::ptr::write_bytes(self.array.buffer, byte, self.array.buffer_capacity) };
        }
    }

    /// Serialize `native` with its padding zeroed and without the bytes rmw reports but never wrote, whatever
    /// the buffer held before.
    fn serialize<T: WrappedTypesupport>(&mut self, native: *const T::CStruct) -> Result<Vec<u8>> {
        let zeroed = self.serialize_over::<T>(native, 0x00)?;
        let filled = self.serialize_over::<T>(native, 0xff)?;
        Ok(lockstep_trace::canonical_from_passes(zeroed, &filled))
    }

    /// Serialize `native` into the buffer filled with `byte` beforehand: padding and the bytes rmw reports but
    /// does not write hold `byte`.
    fn serialize_over<T: WrappedTypesupport>(
        &mut self,
        native: *const T::CStruct,
        byte: u8,
    ) -> Result<Vec<u8>> {
        // rmw grows a buffer smaller than its size estimate with realloc, whose new bytes are not filled. If
        // that happened, serialize again into the grown buffer, filled: it is now large enough.
        for _ in 0..2 {
            let capacity = self.array.buffer_capacity;
            self.fill(byte);
            // SAFETY: `native` is a valid message of T's type support and the array is initialised.
            let ret = unsafe { rmw_serialize(native as *const c_void, T::get_ts(), &mut self.array) };
            if ret != RCL_RET_OK as i32 || self.array.buffer.is_null() {
                return Err(failed("serializing a message", ret));
            }
            if self.array.buffer_capacity == capacity {
                // SAFETY: rmw set `buffer_length` to the bytes it wrote, within the capacity.
                let bytes =
                    unsafe { std::slice::from_raw_parts(self.array.buffer, self.array.buffer_length) };
                return Ok(bytes.to_vec());
            }
        }
        Err(failed(
            "serializing a message (rmw kept growing the buffer)",
            r2r_rcl::RCL_RET_ERROR as i32,
        ))
    }
}

impl Drop for CdrBuffer {
    fn drop(&mut self) {
        // SAFETY: initialised in `with_capacity`, finalised only here.
        unsafe {
            rcutils_uint8_array_fini(&mut self.array);
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use r2r::geometry_msgs::msg::{Pose, PoseArray};

    fn pose_array() -> PoseArray {
        let mut msg = PoseArray::default();
        msg.header.frame_id = "base_link".into(); // 10 bytes: 2 padding bytes, then 4 before the doubles
        msg.poses = vec![Pose::default()];
        msg.poses[0].position.x = 1.5;
        msg
    }

    /// header(4) stamp(8) string length(4) "base_link\0"(10) pad(2) sequence length(4) pad(4) doubles
    fn assert_canonical_layout(bytes: &[u8]) {
        assert_eq!(&bytes[26..28], &[0, 0], "padding after the frame id");
        assert_eq!(&bytes[28..32], &1u32.to_le_bytes());
        assert_eq!(&bytes[32..36], &[0, 0, 0, 0], "padding before the first double");
        assert_eq!(&bytes[36..44], &1.5f64.to_le_bytes());
    }

    #[test]
    fn padding_is_zero_and_content_round_trips() {
        let msg = pose_array();
        let bytes = canonical_cdr(&msg).unwrap();
        assert_canonical_layout(&bytes);
        assert_eq!(PoseArray::from_serialized_bytes(&bytes).unwrap(), msg);
    }

    #[test]
    fn padding_is_zeroed_in_a_buffer_full_of_garbage() {
        let msg = pose_array();
        let expected = canonical_cdr(&msg).unwrap();
        // Reuse one buffer, filled with non-zero garbage before each serialization: rmw writes no padding, so
        // only the zeroing in `serialize` can make the padding bytes zero.
        let mut buffer = CdrBuffer::with_capacity(expected.len()).unwrap();
        for garbage in [0xa5, 0xff, 0x01] {
            buffer.fill(garbage);
            let bytes = with_native(&msg, |native| buffer.serialize::<PoseArray>(native)).unwrap();
            assert_canonical_layout(&bytes);
            assert_eq!(bytes, expected, "garbage {garbage:#04x}");
        }
    }

    /// An rcutils allocator that hands out memory full of 0xa5 garbage, and grows a block by moving it to a
    /// new garbage-filled one: what a reused heap may give, made certain. Each block starts with its size.
    mod garbage {
        use std::alloc::{alloc, dealloc, Layout};
        use std::os::raw::c_void;
        use std::ptr::null_mut;

        const HEADER: usize = 16;

        fn layout(size: usize) -> Option<Layout> {
            Layout::from_size_align(size.checked_add(HEADER)?, HEADER).ok()
        }

        // SAFETY (all four): rcutils passes back only pointers these functions returned, each block starts
        // HEADER bytes earlier with its size, and sizes fit the layout they were allocated with.
        unsafe extern "C" fn allocate(size: usize, _state: *mut c_void) -> *mut c_void {
            let Some(layout) = layout(size) else {
                return null_mut();
            };
            unsafe {
                let base = alloc(layout);
                if base.is_null() {
                    return null_mut();
                }
                base.cast::<usize>().write(size);
                std::ptr::write_bytes(base.add(HEADER), 0xa5, size);
                base.add(HEADER).cast()
            }
        }

        unsafe extern "C" fn deallocate(pointer: *mut c_void, _state: *mut c_void) {
            if pointer.is_null() {
                return;
            }
            unsafe {
                let base = pointer.cast::<u8>().sub(HEADER);
                if let Some(layout) = layout(base.cast::<usize>().read()) {
                    dealloc(base, layout);
                }
            }
        }

        unsafe extern "C" fn reallocate(
            pointer: *mut c_void,
            size: usize,
            state: *mut c_void,
        ) -> *mut c_void {
            unsafe {
                let new = allocate(size, state);
                if !pointer.is_null() && !new.is_null() {
                    let old_size = pointer.cast::<u8>().sub(HEADER).cast::<usize>().read();
                    std::ptr::copy_nonoverlapping(pointer.cast::<u8>(), new.cast::<u8>(), old_size.min(size));
                    deallocate(pointer, state);
                }
                new
            }
        }

        unsafe extern "C" fn zero_allocate(count: usize, size: usize, state: *mut c_void) -> *mut c_void {
            let bytes = count.saturating_mul(size);
            unsafe {
                let pointer = allocate(bytes, state);
                if !pointer.is_null() {
                    std::ptr::write_bytes(pointer.cast::<u8>(), 0, bytes);
                }
                pointer
            }
        }

        pub fn allocator() -> super::rcutils_allocator_t {
            super::rcutils_allocator_t {
                allocate: Some(allocate),
                deallocate: Some(deallocate),
                reallocate: Some(reallocate),
                zero_allocate: Some(zero_allocate),
                state: null_mut(),
            }
        }
    }

    #[test]
    fn bytes_rmw_reports_but_never_writes_are_not_part_of_the_message() {
        use r2r::std_msgs::msg::{Empty, Float64MultiArray, UInt8};
        // rmw reports 8 bytes for a UInt8 (its size estimate) and 20 for an empty Float64MultiArray.
        assert!(UInt8 { data: 1 }.to_serialized_bytes().unwrap().len() > 5);
        assert_eq!(canonical_cdr(&UInt8 { data: 1 }).unwrap(), [0, 1, 0, 0, 1]);
        assert_eq!(canonical_cdr(&UInt8 { data: 0 }).unwrap(), [0, 1, 0, 0, 0]);
        assert_eq!(canonical_cdr(&Empty::default()).unwrap(), [0, 1, 0, 0, 0]);
        let mut bytes = vec![0, 1, 0, 0];
        bytes.extend([0u8; 12]); // no dimensions, offset 0, no data
        assert_eq!(canonical_cdr(&Float64MultiArray::default()).unwrap(), bytes);
        let one = Float64MultiArray {
            data: vec![0.0],
            ..Float64MultiArray::default()
        };
        assert_eq!(
            canonical_cdr(&one).unwrap().len(),
            4 + 12 + 4 + 8,
            "padding before the double stays"
        );
    }

    #[test]
    fn a_buffer_rmw_has_to_grow_still_gives_zero_padding() {
        let msg = pose_array();
        let expected = canonical_cdr(&msg).unwrap();
        // A 1-byte buffer: rmw grows it through the allocator, whose new bytes are garbage.
        let mut buffer = CdrBuffer::with_allocator(1, garbage::allocator()).unwrap();
        let bytes = with_native(&msg, |native| buffer.serialize::<PoseArray>(native)).unwrap();
        assert!(buffer.array.buffer_capacity >= expected.len());
        assert_canonical_layout(&bytes);
        assert_eq!(bytes, expected);
    }
}
