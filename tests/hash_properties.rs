//! Property tests: any tree packs and unpacks to itself, as a packed hash and as a file.

use proptest::prelude::*;
use scr::hash::Hash;

fn tree() -> impl Strategy<Value = Hash> {
    let key = "[A-Za-z0-9_./ -]{0,12}";
    let leaf = Just(Hash::new());
    leaf.prop_recursive(6, 200, 8, move |inner| {
        prop::collection::vec((key, inner), 0..8).prop_map(|elems| {
            let mut h = Hash::new();
            for (k, v) in elems {
                h.set(k, v); // later duplicates replace earlier ones, so keys stay unique
            }
            h
        })
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn pack_unpack_round_trips(h in tree()) {
        let packed = h.pack();
        prop_assert_eq!(packed.len(), h.pack_size());
        prop_assert_eq!(Hash::unpack(&packed).unwrap(), h.clone());
        let file = h.to_file_bytes();
        let (back, size) = Hash::from_file_bytes(&file).unwrap();
        prop_assert_eq!(size, file.len());
        prop_assert_eq!(back.to_file_bytes(), file);
        prop_assert_eq!(back.to_string(), h.to_string());
    }

    #[test]
    fn truncation_is_always_an_error(h in tree(), cut in 0usize..1000) {
        let file = h.to_file_bytes();
        let cut = cut % file.len();
        prop_assert!(Hash::from_file_bytes(&file[..cut]).is_err());
    }

    #[test]
    fn any_flipped_byte_is_caught(h in tree(), at in 0usize..1000, bit in 0u8..8) {
        let mut file = h.to_file_bytes();
        let at = at % file.len();
        file[at] ^= 1 << bit;
        // The header checks or the CRC catch every single-bit change.
        prop_assert!(Hash::from_file_bytes(&file).is_err());
    }
}
