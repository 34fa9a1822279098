use super::*;
use crate::dataset::Dataset;

#[test]
fn a_scavenged_rank_count_beyond_any_job_is_refused_before_anything_is_allocated() {
    let dir = tempfile::tempdir().unwrap();
    let prefix = dir.path();
    std::fs::create_dir_all(layout::dataset_meta_dir(prefix, 1)).unwrap();
    std::fs::create_dir_all(prefix.join("ckpt.1")).unwrap();
    std::fs::write(prefix.join("ckpt.1/rank_0"), b"data").unwrap();
    let mut meta =
        Meta::for_user_file("rank_0", 1_000_000_000_000, "ckpt.1/rank_0", "/p", "rank_0");
    meta.set_size(4);
    meta.set_complete(true);
    let mut map = Filemap::new();
    map.add_file(1, 0, "ckpt.1/rank_0");
    map.set_meta(1, 0, "ckpt.1/rank_0", &meta);
    map.set_expected_files(1, 0, 1);
    map.set_dataset(1, 0, &Dataset::new());
    map.write(&fmap_path(prefix, 1, 0)).unwrap();
    let started = std::time::Instant::now();
    let e = index_dataset(prefix, 1, 4096).unwrap_err().to_string();
    assert!(
        e.contains("1000000000000 ranks") && e.contains("more than"),
        "{e}"
    );
    assert!(started.elapsed().as_secs() < 2);
}
