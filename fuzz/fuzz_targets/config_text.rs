//! Config text, TOML or JSON, from arbitrary bytes: reading and building never panic, a text
//! that reads writes back to a text that reads equal in both formats, a refused build names
//! a field, and the duration parser reads back whatever it accepts.
#![no_main]

use libfuzzer_sys::fuzz_target;
use resilix_config::{Config, duration};

fuzz_target!(|data: &[u8]| {
    let Some((&format, rest)) = data.split_first() else {
        return;
    };
    let Ok(text) = core::str::from_utf8(rest) else {
        return;
    };
    if let Ok(d) = duration::parse(text) {
        assert_eq!(duration::parse(&duration::format(d)), Ok(d), "{text:?}");
    }
    let read = if format & 1 == 0 {
        Config::from_toml_str(text)
    } else {
        Config::from_json_str(text)
    };
    let Ok(config) = read else {
        return;
    };
    // A NaN read into a float field is not equal to itself; everything else must be.
    if config == config {
        let toml = config.to_toml_string();
        assert_eq!(Config::from_toml_str(&toml).as_ref(), Ok(&config), "{toml}");
        let json = config.to_json_string();
        assert_eq!(Config::from_json_str(&json).as_ref(), Ok(&config), "{json}");
    }
    if let Err(e) = config.build() {
        assert!(!e.path().is_empty(), "{e}");
    }
});
