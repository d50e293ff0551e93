//! ubunye: the lease/claim engine of ADR 008, byte-compatible with ubunye-engine 0.8.0.
pub mod key;
pub mod pyjson;
