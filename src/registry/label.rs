//! Where a label points (SPEC §20, §26): one version, or several with weights — a canary.
//! `registry.json` keeps the plain form for one target (`"production": "1.2.0"`) and an
//! object of percentages for several (`"production": {"1.2.0": 90, "1.3.0": 10}`).
//!
//! A pin on a weighted label chooses its target by a stable hash of a routing key (a work
//! order's `route_key`, else its id): the same key always gets the same version, and over
//! many keys each target gets its share.

use std::collections::BTreeMap;

use semver::Version;
use serde_json::{Value, json};

/// A label's targets: version → weight (percent). One target has weight 100.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Targets(BTreeMap<Version, u32>);

impl Targets {
    /// The label names `version` alone.
    pub fn one(version: Version) -> Targets {
        Targets(BTreeMap::from([(version, 100)]))
    }

    /// Weighted targets; those of weight 0 are dropped. `None` when none is left or the
    /// weights do not add up to 100.
    pub fn weighted(weights: BTreeMap<Version, u32>) -> Option<Targets> {
        let kept: BTreeMap<Version, u32> = weights.into_iter().filter(|(_, w)| *w > 0).collect();
        (!kept.is_empty() && kept.values().map(|w| u64::from(*w)).sum::<u64>() == 100)
            .then_some(Targets(kept))
    }

    /// The one version, when the label has one target.
    pub fn single(&self) -> Option<&Version> {
        match self.0.len() {
            1 => self.0.keys().next(),
            _ => None,
        }
    }

    pub fn is_weighted(&self) -> bool {
        self.0.len() > 1
    }

    pub fn versions(&self) -> impl Iterator<Item = &Version> {
        self.0.keys()
    }

    pub fn weights(&self) -> &BTreeMap<Version, u32> {
        &self.0
    }

    pub fn contains(&self, version: &Version) -> bool {
        self.0.contains_key(version)
    }

    pub fn weight_of(&self, version: &Version) -> Option<u32> {
        self.0.get(version).copied()
    }

    /// `version` at `weight` percent, the other targets sharing the rest in proportion to
    /// their weights (the largest takes what rounding leaves): `production` at 1.2.0, with
    /// 1.3.0 at 10, is 1.2.0 at 90 and 1.3.0 at 10. Weight 0 drops `version` (a rollback),
    /// 100 makes it the one target. `None` when nothing would be left.
    pub fn with_weight(&self, version: &Version, weight: u32) -> Option<Targets> {
        let weight = weight.min(100);
        let others: Vec<(&Version, u32)> =
            self.0.iter().filter(|(v, _)| *v != version).map(|(v, w)| (v, *w)).collect();
        let rest = 100 - weight;
        let total: u64 = others.iter().map(|(_, w)| u64::from(*w)).sum();
        let mut out = BTreeMap::new();
        if weight > 0 {
            out.insert(version.clone(), weight);
        }
        if rest > 0 {
            if total == 0 {
                return (weight == 100).then(|| Targets::one(version.clone()));
            }
            let mut given = 0;
            let mut shares: Vec<(Version, u32)> = others
                .iter()
                .map(|(v, w)| {
                    let share = (u64::from(*w) * u64::from(rest) / total) as u32;
                    given += share;
                    ((*v).clone(), share)
                })
                .collect();
            // Rounding's remainder goes to the heaviest (the first of them).
            if let Some(heaviest) = shares.iter_mut().max_by_key(|(_, s)| *s) {
                heaviest.1 += rest - given;
            }
            out.extend(shares);
        }
        Targets::weighted(out)
    }

    /// The target a routing key gets, with its weight ([`route_point`], then
    /// [`Targets::pick_point`]).
    pub fn pick(&self, key: &str) -> (&Version, u32) {
        self.pick_point(route_point(key))
    }

    /// The target of a routing point: the point taken modulo 100, walked through the
    /// targets' weights in version order.
    pub fn pick_point(&self, point: u64) -> (&Version, u32) {
        let point = point % 100;
        let mut acc = 0u64;
        for (version, weight) in &self.0 {
            acc += u64::from(*weight);
            if point < acc {
                return (version, *weight);
            }
        }
        let (v, w) = self.0.iter().next_back().expect("a label has a target");
        (v, *w)
    }

    /// The target with the largest weight (the highest version among equals): where a pin
    /// without a routing key goes.
    pub fn heaviest(&self) -> (&Version, u32) {
        let (v, w) =
            self.0.iter().max_by_key(|(v, w)| (**w, (*v).clone())).expect("a label has a target");
        (v, *w)
    }

    /// As registry.json writes it.
    pub fn to_json(&self) -> Value {
        match self.single() {
            Some(v) => json!(v.to_string()),
            None => Value::Object(self.0.iter().map(|(v, w)| (v.to_string(), json!(w))).collect()),
        }
    }

    /// Read from registry.json (the schema checked the shape).
    pub fn from_json(value: &Value) -> Option<Targets> {
        match value {
            Value::String(s) => crate::id::parse_version(s).map(Targets::one),
            Value::Object(map) => {
                let weights: Option<BTreeMap<Version, u32>> = map
                    .iter()
                    .map(|(v, w)| {
                        Some((crate::id::parse_version(v)?, u32::try_from(w.as_u64()?).ok()?))
                    })
                    .collect();
                Targets::weighted(weights?)
            }
            _ => None,
        }
    }

    /// For people: `1.2.0`, or `1.2.0 90%, 1.3.0 10%`.
    pub fn describe(&self) -> String {
        match self.single() {
            Some(v) => v.to_string(),
            None => self.0.iter().map(|(v, w)| format!("{v} {w}%")).collect::<Vec<_>>().join(", "),
        }
    }

    /// The weights as a history event records them (version text → weight).
    pub fn event_weights(&self) -> BTreeMap<String, u32> {
        self.0.iter().map(|(v, w)| (v.to_string(), *w)).collect()
    }

    /// The weights a history event records, read.
    pub fn from_event(weights: &BTreeMap<String, u32>) -> Option<Targets> {
        let parsed: Option<BTreeMap<Version, u32>> =
            weights.iter().map(|(v, w)| Some((crate::id::parse_version(v)?, *w))).collect();
        Targets::weighted(parsed?)
    }
}

/// A routing key as a point: the first 64 bits of its SHA-256. The same key, the same
/// point, in every process.
pub fn route_point(key: &str) -> u64 {
    let digest = crate::digest::sha256_hex(key.as_bytes());
    u64::from_str_radix(&digest[..16], 16).unwrap_or(0)
}

impl std::fmt::Display for Targets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.describe())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Version {
        Version::parse(s).unwrap()
    }

    #[test]
    fn weights_share_the_rest_and_roll_back() {
        let production = Targets::one(v("1.2.0"));
        let canary = production.with_weight(&v("1.3.0"), 10).unwrap();
        assert_eq!(canary.describe(), "1.2.0 90%, 1.3.0 10%");
        assert_eq!(canary.to_json(), json!({"1.2.0": 90, "1.3.0": 10}));
        let three = canary.with_weight(&v("1.4.0"), 5).unwrap();
        assert_eq!(three.weights().values().sum::<u32>(), 100, "{}", three.describe());
        assert_eq!(three.weight_of(&v("1.4.0")), Some(5));
        // Weight 0 is a rollback; 100 makes the version the one target.
        let back = canary.with_weight(&v("1.3.0"), 0).unwrap();
        assert_eq!(back, Targets::one(v("1.2.0")));
        assert_eq!(back.to_json(), json!("1.2.0"));
        assert_eq!(canary.with_weight(&v("1.3.0"), 100).unwrap(), Targets::one(v("1.3.0")));
        assert_eq!(Targets::one(v("1.2.0")).with_weight(&v("1.2.0"), 0), None);
        assert_eq!(Targets::from_json(&canary.to_json()), Some(canary.clone()));
        assert_eq!(
            Targets::from_json(&json!({"1.2.0": 90, "1.3.0": 20})),
            None,
            "weights add up to 100"
        );
    }

    #[test]
    fn routing_is_stable_and_splits_by_weight() {
        let canary = Targets::one(v("1.2.0")).with_weight(&v("1.3.0"), 10).unwrap();
        // The same key, the same version, every time.
        for key in ["user-1", "user-2", "WO-42"] {
            assert_eq!(canary.pick(key), canary.pick(key));
        }
        let n = 10_000;
        let to_canary =
            (0..n).filter(|i| canary.pick(&format!("key-{i}")).0 == &v("1.3.0")).count();
        let share = to_canary as f64 / n as f64;
        assert!((0.08..=0.12).contains(&share), "10% ± 2 over {n} keys: {share}");
        assert_eq!(canary.pick("key-1").1, canary.weight_of(canary.pick("key-1").0).unwrap());
    }
}
