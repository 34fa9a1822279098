//! Any bytes given to the hash-file decoder give a hash or a typed error, never a panic;
//! whatever decodes re-encodes to the same bytes (apart from repeated keys SCR merges) and
//! decodes again to the same hash.
#![no_main]
use libfuzzer_sys::fuzz_target;
use scr::HashView;
use scr::hash::Hash;

fuzz_target!(|data: &[u8]| {
    if let Ok((hash, size)) = Hash::from_file_bytes(data) {
        let again = hash.to_file_bytes();
        let (back, _) = Hash::from_file_bytes(&again).expect("our own output decodes");
        assert_eq!(back, hash);
        assert!(size <= data.len());
        let _ = hash.to_string();
        let _ = hash.to_json();
        // typed views must reject or accept, not panic
        let _ = scr::filemap::Filemap::from_hash(hash.clone()).map(|f| (f.datasets(), f.ranks()));
        let _ = scr::index::IndexFile::from_hash(hash.clone()).map(|i| i.restart_candidates(None));
        let _ = scr::summary::Summary::from_hash(hash.clone()).map(|s| s.embedded_rank2file());
        let _ = scr::halt::HaltFile::from_hash(hash.clone()).map(|h| h.decision(0, Some(0)));
        let _ = scr::flush::FlushFile::from_hash(hash).map(|f| f.latest());
    }
    let _ = Hash::unpack(data);
});
