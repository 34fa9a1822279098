//! Any text given to the configuration parser parses or gives an error naming the line,
//! never a panic; every parsed key is upper-case and no token is longer than SCR allows.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    match scr::config::ConfigFile::parse(text, "fuzz.conf") {
        Ok(file) => {
            for e in &file.entries {
                assert!(!e.key.is_empty() && !e.value.is_empty());
                assert_eq!(e.key, e.key.to_ascii_uppercase());
                assert!(e.key.len() <= scr::config::MAX_TOKEN && e.value.len() <= scr::config::MAX_TOKEN);
            }
        }
        Err(err) => assert!(err.to_string().starts_with("fuzz.conf:")),
    }
});
