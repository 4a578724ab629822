//! A goal's id: the client's UUID.

use std::fmt;

use r2r::unique_identifier_msgs::msg::UUID;

/// A goal's id (the client's UUID), shown as UUIDs are.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct GoalId(pub [u8; 16]);

impl GoalId {
    pub(super) fn from_msg(msg: &UUID) -> Self {
        let mut id = [0; 16];
        for (to, from) in id.iter_mut().zip(&msg.uuid) {
            *to = *from;
        }
        Self(id)
    }

    pub(super) fn msg(&self) -> UUID {
        UUID {
            uuid: self.0.to_vec(),
        }
    }

    pub(super) fn is_zero(&self) -> bool {
        self.0 == [0; 16]
    }
}

impl fmt::Display for GoalId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, b) in self.0.iter().enumerate() {
            if matches!(i, 4 | 6 | 8 | 10) {
                f.write_str("-")?;
            }
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_goal_id_reads_as_a_uuid() {
        let id = GoalId([
            0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde, 0xf0, 0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef,
        ]);
        assert_eq!(id.to_string(), "12345678-9abc-def0-0123-456789abcdef");
        assert_eq!(GoalId::from_msg(&id.msg()), id);
        assert!(GoalId::from_msg(&UUID { uuid: vec![] }).is_zero());
    }
}
