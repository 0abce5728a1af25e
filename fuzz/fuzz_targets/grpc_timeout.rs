//! The `grpc-timeout` and milliseconds decoders on arbitrary bytes: never panic, accept only
//! the documented grammar, and re-encoding what they accept never hands on more time.
#![no_main]

use libfuzzer_sys::fuzz_target;
use resilix::time::{decode_grpc_timeout, decode_millis, encode_grpc_timeout, encode_millis};

fuzz_target!(|data: &[u8]| {
    if let Ok(d) = decode_grpc_timeout(data) {
        let (unit, digits) = data.split_last().unwrap();
        assert!(b"HMSmun".contains(unit));
        assert!(!digits.is_empty() && digits.len() <= 8);
        assert!(digits.iter().all(u8::is_ascii_digit));
        let again = encode_grpc_timeout(d);
        assert!(again.len() <= 9);
        let back = decode_grpc_timeout(again.as_bytes()).unwrap();
        assert!(back <= d, "{data:?} -> {d:?} -> {again} -> {back:?}");
    }
    if let Ok(d) = decode_millis(data) {
        assert!(!data.is_empty() && data.len() <= 20);
        assert!(data.iter().all(u8::is_ascii_digit));
        assert_eq!(decode_millis(encode_millis(d).as_bytes()), Ok(d));
    }
});
