//! Canonical CDR bytes of a message, the input of its payload digest.
//!
//! `rmw_serialize` (behind r2r's `to_serialized_bytes` and rclpy's `serialize_message`) skips the alignment
//! padding of CDR without writing it, so padding bytes hold whatever the buffer held before: rclpy's output
//! for a `geometry_msgs/PoseArray` carries heap garbage before the first double, and so may a reused r2r
//! buffer or a DDS payload pool. Digesting those bytes would make one message's digest vary by process.
//! The canonical form is the same CDR with every padding byte zero (what `rosbags` and any from-scratch CDR
//! writer produce): serialize into a buffer zeroed beforehand and large enough that rmw never reallocates it.

use r2r::WrappedTypesupport;
use r2r_rcl::{
    rcutils_get_default_allocator, rcutils_get_zero_initialized_uint8_array, rcutils_uint8_array_fini,
    rcutils_uint8_array_init, rmw_serialize, RCL_RET_OK,
};

use crate::{Error, Result};

fn failed(what: &str, code: i32) -> Error {
    Error::Ros {
        action: format!("{what} (canonical CDR)"),
        source: r2r::Error::from_rcl_error(code),
    }
}

/// The CDR bytes of `msg` (encapsulation header included) with all alignment padding zeroed.
pub fn canonical_cdr<T: WrappedTypesupport>(msg: &T) -> Result<Vec<u8>> {
    // rmw_fastrtps has no size query; a first serialization tells the size.
    let size = crate::ros(msg.to_serialized_bytes(), || "serializing a message".to_owned())?.len();
    let native = T::create_msg();
    if native.is_null() {
        return Err(failed(
            "allocating a native message",
            r2r_rcl::RCL_RET_BAD_ALLOC as i32,
        ));
    }
    // SAFETY: `native` is a valid, non-null message created for T's type support; it is destroyed once below.
    msg.copy_to_native(unsafe { &mut *native });
    let result = serialize_zeroed::<T>(native, size);
    T::destroy_msg(native);
    result
}

fn serialize_zeroed<T: WrappedTypesupport>(native: *mut T::CStruct, size: usize) -> Result<Vec<u8>> {
    // SAFETY: the array is initialised by rcutils with `capacity` bytes before use, zeroed over its whole
    // capacity, read only within `buffer_length` (set by rmw to at most the capacity), and finalised once.
    unsafe {
        let mut buffer = rcutils_get_zero_initialized_uint8_array();
        let allocator = rcutils_get_default_allocator();
        let capacity = size.max(1);
        let ret = rcutils_uint8_array_init(&mut buffer, capacity, &allocator);
        if ret != RCL_RET_OK as i32 {
            return Err(failed("allocating a serialization buffer", ret));
        }
        std::ptr::write_bytes(buffer.buffer, 0, buffer.buffer_capacity);
        let ret = rmw_serialize(native as *const std::os::raw::c_void, T::get_ts(), &mut buffer);
        let bytes = if ret == RCL_RET_OK as i32 && !buffer.buffer.is_null() {
            Ok(std::slice::from_raw_parts(buffer.buffer, buffer.buffer_length).to_vec())
        } else {
            Err(failed("serializing a message", ret))
        };
        rcutils_uint8_array_fini(&mut buffer);
        bytes
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

    #[test]
    fn padding_is_zero_and_content_round_trips() {
        let msg = pose_array();
        let bytes = canonical_cdr(&msg).unwrap();
        // header(4) stamp(8) string length(4) "base_link\0"(10) pad(2) sequence length(4) pad(4) doubles
        assert_eq!(&bytes[26..28], &[0, 0]);
        assert_eq!(&bytes[28..32], &1u32.to_le_bytes());
        assert_eq!(&bytes[32..36], &[0, 0, 0, 0]);
        assert_eq!(PoseArray::from_serialized_bytes(&bytes).unwrap(), msg);
    }

    #[test]
    fn same_message_same_bytes_whatever_was_serialized_before() {
        let first = canonical_cdr(&pose_array()).unwrap();
        // Dirty the buffers rmw and r2r reuse with a message whose bytes are non-zero where padding goes.
        let mut other = PoseArray::default();
        other.header.frame_id = "abcdefghijklmnopqrstuvwxyz".repeat(4);
        other.poses = vec![Pose::default(); 8];
        for pose in &mut other.poses {
            pose.position.x = f64::from_bits(u64::MAX >> 2);
        }
        canonical_cdr(&other).unwrap();
        assert_eq!(canonical_cdr(&pose_array()).unwrap(), first);
    }
}
