//! Any text given to the hostlist parser parses or gives an error with a column inside the
//! input, never a panic or a hang; what parses compresses to a form that parses back to
//! the same set, and counting agrees with expanding.
#![no_main]
use hostlist::{HostList, HostSet};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    match text.parse::<HostList>() {
        Err(e) => assert!(e.column >= 1 && e.column <= text.len() + 1),
        Ok(list) => {
            let count = list.count();
            if count > 0 {
                assert!(list.nth(1).is_some() && list.nth(-1).is_some());
            }
            assert!(list.nth(0).is_none());
            if count <= 2_000 {
                assert_eq!(list.iter().count() as u64, count);
            }
            if count <= 2_000 {
                if let Ok(set) = list.to_set() {
                    let folded = set.to_string();
                    let back: HostSet = folded.parse().expect("our compressed form parses");
                    assert_eq!(back, set, "{folded}");
                    assert!(set.count() <= count);
                    assert_eq!(set.difference(&set).count(), 0);
                    assert_eq!(set.union(&set), set);
                }
            }
        }
    }
});
