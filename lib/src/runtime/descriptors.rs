//! Checkpoint descriptors (`CKPT=` lines or the one SCR_COPY_TYPE implies) and the
//! redundancy sets each one chooses.

use super::*;

/// A checkpoint descriptor: which store a checkpoint goes to, how often, and which
/// redundancy scheme protects it.
#[derive(Clone, Debug)]
pub(super) struct CkptDesc {
    pub(super) interval: u64,
    pub(super) store: String,
    pub(super) scheme: Scheme,
    pub(super) set_size: u64,
    pub(super) failures: u64,
    pub(super) hop: u64,
    /// PARTNER: how many right neighbours hold a copy (SCR 3's REPLICAS).
    pub(super) replicas: u64,
    /// The failure group sets span: NODE (the default), WORLD, or a name from GROUPS= lines.
    pub(super) group: String,
    /// Files go straight to the prefix (BYPASS=1, SCR_CACHE_BYPASS): the cache keeps only
    /// the filemap, and the checkpoint is published on the prefix when it completes.
    /// Redundancy has nothing to protect in cache, so the scheme is SINGLE.
    pub(super) bypass: bool,
}

impl CkptDesc {
    /// From `CKPT=` (and 1.1-8 `CKPTDESC=`) lines where they apply
    /// ([`Params::descriptor_lines_apply`]), else the one SCR implies from SCR_CACHE_BASE
    /// and SCR_COPY_TYPE; one enabled descriptor must have INTERVAL=1.
    pub(super) fn from_params(params: &Params) -> Result<Vec<CkptDesc>> {
        let base = params.get("SCR_CACHE_BASE").unwrap_or("/tmp").to_string();
        let default_scheme = params
            .get("SCR_COPY_TYPE")
            .and_then(Scheme::parse)
            .unwrap_or(Scheme::Xor);
        let number = |text: Option<&str>, param: &str, fallback: u64| {
            text.and_then(|t| t.parse().ok())
                .or(params.count(param))
                .unwrap_or(fallback)
        };
        let mut out = Vec::new();
        let lines = params
            .descriptors_of("CKPT")
            .chain(params.descriptors_of("CKPTDESC"))
            .filter(|_| params.descriptor_lines_apply());
        let bypass_default = params.bool("SCR_CACHE_BYPASS");
        for d in lines {
            if d.attr("ENABLED") == Some("0") {
                continue;
            }
            out.push(CkptDesc {
                bypass: d
                    .attr("BYPASS")
                    .and_then(scr::params::parse_bool)
                    .unwrap_or(bypass_default),
                interval: d.attr("INTERVAL").and_then(|i| i.parse().ok()).unwrap_or(1),
                store: d
                    .attr("STORE")
                    .or(d.attr("BASE"))
                    .unwrap_or(&base)
                    .to_string(),
                scheme: d
                    .attr("TYPE")
                    .and_then(Scheme::parse)
                    .unwrap_or(default_scheme),
                set_size: number(d.attr("SET_SIZE"), "SCR_SET_SIZE", 8),
                failures: number(d.attr("SET_FAILURES"), "SCR_SET_FAILURES", 2),
                hop: number(d.attr("HOP_DISTANCE"), "SCR_HOP_DISTANCE", 1).max(1),
                replicas: d
                    .attr("REPLICAS")
                    .and_then(|r| r.parse().ok())
                    .unwrap_or(1)
                    .max(1),
                group: d
                    .attr("GROUP")
                    .or(params.get("SCR_GROUP"))
                    .unwrap_or("NODE")
                    .to_ascii_uppercase(),
            });
        }
        if out.is_empty() {
            out.push(CkptDesc {
                bypass: bypass_default,
                interval: 1,
                store: base,
                scheme: default_scheme,
                set_size: number(None, "SCR_SET_SIZE", 8),
                failures: number(None, "SCR_SET_FAILURES", 2),
                hop: number(None, "SCR_HOP_DISTANCE", 1).max(1),
                replicas: 1,
                group: params
                    .get("SCR_GROUP")
                    .unwrap_or("NODE")
                    .to_ascii_uppercase(),
            });
        }
        if !out.iter().any(|d| d.interval == 1) {
            return Err(failure(
                "no enabled checkpoint descriptor has INTERVAL=1; every checkpoint needs one (add e.g. CKPT=0 INTERVAL=1 to the configuration)",
            ));
        }
        for d in out.iter_mut().filter(|d| d.bypass) {
            d.scheme = Scheme::Single;
        }
        out.sort_by_key(|d| d.interval);
        Ok(out)
    }

    /// Each world rank's failure group under this descriptor: its node (NODE), one group
    /// for all (WORLD), or the value GROUPS= lines give its node for the group's name
    /// (`GROUPS=host1 POWER=pdu1`); a node no line names is a group of its own.
    pub(super) fn failure_groups(&self, params: &Params, node_names: &[String]) -> Vec<String> {
        match self.group.as_str() {
            "NODE" => node_names.to_vec(),
            "WORLD" => vec!["WORLD".into(); node_names.len()],
            name => {
                // the first GROUPS= line naming a node that gives it this group wins
                let mut group_of: HashMap<&str, String> = HashMap::new();
                for d in params.descriptors_of("GROUPS") {
                    if let Some((_, v)) = d.attrs.iter().find(|(k, _)| k.eq_ignore_ascii_case(name))
                    {
                        group_of
                            .entry(d.name.as_str())
                            .or_insert_with(|| format!("{name}={v}"));
                    }
                }
                node_names
                    .iter()
                    .map(|node| {
                        group_of
                            .get(node.as_str())
                            .cloned()
                            .unwrap_or_else(|| format!("node {node}"))
                    })
                    .collect()
            }
        }
    }

    /// The redundancy sets of this descriptor over the failure groups of the ranks, whose
    /// nodes are `node_names` (one per world rank). A scheme the groups cannot satisfy
    /// falls back to SINGLE, and rank 0 says so (SCR 1.2 downgrades silently).
    pub(super) fn select_sets(
        &mut self,
        params: &Params,
        node_names: &[String],
        warn: bool,
    ) -> RedundancySets {
        let scheme = self.scheme;
        let groups = self.failure_groups(params, node_names);
        match RedundancySets::select(scheme, &groups, self.set_size, self.failures) {
            Ok(sets) => {
                self.scheme = scheme;
                sets
            }
            Err(why) => {
                if warn {
                    eprintln!(
                        "SCR: WARNING: redundancy is disabled for checkpoints in {}: {why}. \
                         They are cached with SINGLE: losing a node loses them until they are flushed.",
                        self.store
                    );
                }
                self.scheme = Scheme::Single;
                RedundancySets::select(Scheme::Single, node_names, 1, 0)
                    .expect("SINGLE always fits")
            }
        }
    }
}
