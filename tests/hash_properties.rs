//! Property tests: any tree packs and unpacks to itself, as a packed hash and as a file; and
//! every change to a hash agrees with the same change to a plain ordered tree.

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

/// The plainest ordered tree: what every hash operation must agree with, whatever shape
/// the hash keeps a level in (a `key = value` level is held inline).
#[derive(Clone, Debug, Default, PartialEq)]
struct Model(Vec<(String, Model)>);

impl Model {
    fn of(h: &Hash) -> Model {
        Model(
            h.iter()
                .map(|(k, c)| (k.to_string(), Model::of(c)))
                .collect(),
        )
    }
    fn at(&self, key: &str) -> Option<usize> {
        self.0.iter().position(|(k, _)| k == key)
    }
    fn child(&mut self, key: &str) -> &mut Model {
        let at = self.at(key).unwrap_or_else(|| {
            self.0.push((key.to_string(), Model::default()));
            self.0.len() - 1
        });
        &mut self.0[at].1
    }
    fn set(&mut self, key: &str, value: Model) {
        *self.child(key) = value;
    }
    fn unset(&mut self, key: &str) {
        if let Some(at) = self.at(key) {
            self.0.remove(at);
        }
    }
    fn merge(&mut self, other: &Model) {
        for (k, v) in &other.0 {
            self.child(k).merge(v);
        }
    }
}

/// A tree as a file gives it: read back, a `key = value` level is held inline.
fn read_tree() -> impl Strategy<Value = Hash> {
    prop_oneof![
        tree(),
        tree().prop_map(|h| Hash::unpack(&h.pack()).unwrap())
    ]
}

#[derive(Clone, Debug)]
enum Op {
    SetValue(String, String),
    Child(String, String),
    Unset(String),
    UnsetKv(String, String),
    Merge(Hash),
    MergeOwned(Hash),
    RetainShort,
    ClearChild(String),
    SetTree(String, Hash),
    SetBelow(String, String, String),
    AddToEveryChild(String),
    SortKeys(bool),
}

fn op() -> impl Strategy<Value = Op> {
    // up to 30 keys: a level passes the size where lookups go through an index
    let key = "[a-e]{1,2}";
    prop_oneof![
        (key, key).prop_map(|(k, v)| Op::SetValue(k, v)),
        (key, key).prop_map(|(k, v)| Op::Child(k, v)),
        key.prop_map(Op::Unset),
        (key, key).prop_map(|(k, v)| Op::UnsetKv(k, v)),
        read_tree().prop_map(Op::Merge),
        read_tree().prop_map(Op::MergeOwned),
        Just(Op::RetainShort),
        key.prop_map(Op::ClearChild),
        (key, read_tree()).prop_map(|(k, t)| Op::SetTree(k, t)),
        (key, key, key).prop_map(|(k, s, v)| Op::SetBelow(k, s, v)),
        key.prop_map(Op::AddToEveryChild),
        any::<bool>().prop_map(Op::SortKeys),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn every_change_agrees_with_a_plain_ordered_tree(
        start in read_tree(),
        ops in prop::collection::vec(op(), 0..40),
    ) {
        let mut m = Model::of(&start);
        let mut h = start;
        for op in ops {
            match op {
                Op::SetValue(k, v) => {
                    h.set_value(&k, &v);
                    m.set(&k, Model(vec![(v, Model::default())]));
                }
                Op::Child(k, v) => {
                    h.child(&k).child(&v);
                    m.child(&k).child(&v);
                }
                Op::Unset(k) => {
                    h.unset(&k);
                    m.unset(&k);
                }
                Op::UnsetKv(k, v) => {
                    h.unset_kv(&k, &v);
                    if let Some(at) = m.at(&k) {
                        m.0[at].1.unset(&v);
                        if m.0[at].1.0.is_empty() {
                            m.0.remove(at);
                        }
                    }
                }
                Op::Merge(t) => {
                    h.merge(&t);
                    m.merge(&Model::of(&t));
                }
                Op::MergeOwned(t) => {
                    m.merge(&Model::of(&t));
                    h.merge_owned(t);
                }
                Op::RetainShort => {
                    h.retain(|k, _| k.len() < 2);
                    m.0.retain(|(k, _)| k.len() < 2);
                }
                Op::ClearChild(k) => {
                    if let Some(c) = h.get_mut(&k) {
                        c.clear();
                    }
                    if let Some(at) = m.at(&k) {
                        m.0[at].1 = Model::default();
                    }
                }
                Op::SetTree(k, t) => {
                    m.set(&k, Model::of(&t));
                    h.set(k, t);
                }
                Op::SetBelow(k, sub, v) => {
                    if let Some(c) = h.get_mut(&k) {
                        c.set_value(&sub, &v);
                    }
                    if let Some(at) = m.at(&k) {
                        m.0[at].1.set(&sub, Model(vec![(v, Model::default())]));
                    }
                }
                Op::AddToEveryChild(v) => {
                    for (_, c) in h.iter_mut() {
                        c.child(&v);
                    }
                    for (_, c) in &mut m.0 {
                        c.child(&v);
                    }
                }
                Op::SortKeys(descending) => {
                    h.sort_keys(descending);
                    // numerically where both keys are integers, else as strings
                    let order = |a: &str, b: &str| match (a.parse::<i64>(), b.parse::<i64>()) {
                        (Ok(x), Ok(y)) => x.cmp(&y),
                        _ => a.cmp(b),
                    };
                    m.0.sort_by(|a, b| {
                        let o = order(&a.0, &b.0);
                        if descending { o.reverse() } else { o }
                    });
                }
            }
            prop_assert_eq!(Model::of(&h), m.clone());
            prop_assert_eq!(h.len(), m.0.len());
            for (k, values) in &m.0 {
                prop_assert!(h.contains(k));
                prop_assert_eq!(h.first_value(k), values.0.first().map(|(v, _)| v.as_str()));
                prop_assert_eq!(h.value(k).is_ok(), values.0.len() == 1);
            }
            // what is stored reads back the same, and equality does not depend on shape
            let back = Hash::unpack(&h.pack()).unwrap();
            prop_assert_eq!(Model::of(&back), m.clone());
            prop_assert_eq!(&back, &h);
        }
    }
}
