//! Checkpoints: a corrupted serialized structure is refused, never used.

use super::*;

pub(super) fn tamper(json: &str, from: &str, to: &str) -> String {
    assert!(json.contains(from), "{from} not in {json}");
    json.replacen(from, to, 1)
}

#[test]
fn corrupted_checkpoints_are_refused() {
    let p2 = Pbf2::uniform(16, 2_000, 3, 5).unwrap();
    let json = serde_json::to_string(&p2).unwrap();
    assert!(serde_json::from_str::<Pbf2>(&json).is_ok());
    assert!(serde_json::from_str::<Pbf2>(&tamper(&json, "\"seed\":5,", "\"seed\":6,")).is_err());
    let no_levels = r#"{"seed":5,"start":0,"horizon":16,"levels":[]}"#;
    assert!(serde_json::from_str::<Pbf2>(no_levels).is_err());
    // A Bloom filter whose modulus disagrees with its bits would probe outside them.
    let f = crate::bloom::BloomFilter::new(100, 3, 1).unwrap();
    let json = serde_json::to_string(&f).unwrap();
    assert!(serde_json::from_str::<crate::bloom::BloomFilter>(&tamper(
        &json,
        "\"modulus\":100",
        "\"modulus\":1000"
    ))
    .is_err());
    assert!(serde_json::from_str::<crate::bloom::BloomFilter>(&tamper(
        &json,
        "\"hashes\":3",
        "\"hashes\":0"
    ))
    .is_err());
    let b = crate::bloom::BlockedBloomFilter::new(1000, 3, 1).unwrap();
    let json = serde_json::to_string(&b).unwrap();
    assert!(serde_json::from_str::<crate::bloom::BlockedBloomFilter>(&json).is_ok());
    assert!(
        serde_json::from_str::<crate::bloom::BlockedBloomFilter>(&tamper(
            &json,
            "\"blocks\":2",
            "\"blocks\":3"
        ))
        .is_err()
    );
    // A static PBF-1 must have exactly its horizon's nodes.
    let p1 = Pbf1::uniform(8, 2, 8_000, 3, 5).unwrap();
    let json = serde_json::to_string(&p1).unwrap();
    assert!(serde_json::from_str::<Pbf1>(&json).is_ok());
    assert!(
        serde_json::from_str::<Pbf1>(&tamper(&json, "\"horizon\":8", "\"horizon\":16")).is_err()
    );
    assert!(serde_json::from_str::<Pbf1>(&tamper(&json, "\"g\":2", "\"g\":0")).is_err());
    // A dynamic PBF-1 makes new nodes of its node shape: one unlike its nodes would size the
    // next insert's allocation from nothing in the file; and its levels follow its leaves.
    let shape = FilterShape::new(64, 2).unwrap();
    let mut d = Pbf1::dynamic(4, shape, shape, 5).unwrap();
    d.insert(&1u64, 50).unwrap();
    let json = serde_json::to_string(&d).unwrap();
    assert!(serde_json::from_str::<Pbf1>(&json).is_ok());
    let huge = tamper(
        &json,
        "\"node_shape\":{\"bits\":64",
        "\"node_shape\":{\"bits\":1099511627776",
    );
    assert!(serde_json::from_str::<Pbf1>(&huge).is_err());
    let mut tall = serde_json::to_value(&d).unwrap();
    let nodes = tall["nodes"].as_array_mut().unwrap();
    let root = nodes.last().unwrap().clone();
    nodes.extend([root.clone(), root.clone(), root]);
    assert!(serde_json::from_value::<Pbf1>(tall).is_err());
    // Allocations are checked as `Allocation::new` checks them.
    let overflow = r#"{"shapes":[{"bits":18446744073709551615,"hashes":1},{"bits":1,"hashes":1}]}"#;
    assert!(serde_json::from_str::<Allocation>(overflow).is_err());
    assert!(serde_json::from_str::<Allocation>(r#"{"shapes":[{"bits":8,"hashes":0}]}"#).is_err());
}
