//! The versioned encodings of what the tiers outside the process keep (Redis and the
//! database's `call_days` table): a version byte, then the value in postcard. An entry of
//! another version, or one that does not decode, is a miss, never an error.

pub mod call_day;
pub mod rollup;

use callstats_domain::call_day::Held;

/// How an entry writes whether a day is final: 0 settled, 1 provisional, 2 not begun.
pub(crate) const fn held_byte(held: Held) -> u8 {
    match held {
        Held::Settled => 0,
        Held::Provisional => 1,
        Held::NotBegun => 2,
    }
}

/// [`held_byte`] read back; `None` for a byte no version writes.
pub(crate) const fn held_of(byte: u8) -> Option<Held> {
    match byte {
        0 => Some(Held::Settled),
        1 => Some(Held::Provisional),
        2 => Some(Held::NotBegun),
        _ => None,
    }
}
