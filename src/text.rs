//! Text from others (a server's words, records anyone who logs may have written) shown to a
//! user: which characters would show it other than it is.

/// Whether `c` would show text other than it is: a control character (a terminal's escape,
/// no character of HTML's) or one that reorders what follows it (a name shown backwards).
pub fn misleads(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

#[cfg(test)]
mod tests {
    use super::misleads;

    #[test]
    fn control_and_reordering_characters_mislead_and_others_do_not() {
        for c in ['\u{1b}', '\u{7}', '\n', '\u{202e}', '\u{2066}', '\u{200f}'] {
            assert!(misleads(c), "{c:?}");
        }
        for c in ['a', ' ', 'é', '\u{fffd}', '\u{2070}'] {
            assert!(!misleads(c), "{c:?}");
        }
    }
}
