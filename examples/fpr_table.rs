//! Prints measured against predicted false positive rates: the Bloom filter against eq. 2, SBF
//! against eq. 4 and PBF-2 against eq. 9 (each level's own fill), on sequential, random and string
//! keys, with the 99% interval of the measurement.
//!
//! ```text
//! cargo run --release --example fpr_table
//! ```

use chronobloom::core::bloom::{BloomFilter, Filter};
use chronobloom::core::hash::mix64;
use chronobloom::core::temporal::{dyadic_cover, Pbf2, Sbf, TemporalFilter, TimeRange};

const QUERIES: u64 = 1_000_000;

fn main() -> Result<(), chronobloom::Error> {
    println!(
        "| structure | keys | config | predicted | measured | 99% interval of the measurement |"
    );
    println!("|---|---|---|---|---|---|");
    for (target, n) in [(0.1, 100_000u64), (0.01, 100_000), (0.001, 100_000)] {
        for keys in ["sequential u64", "random u64", "strings"] {
            let mut f = BloomFilter::with_fpr(n, target, 1)?;
            let key = |i: u64| match keys {
                "sequential u64" => i.to_le_bytes().to_vec(),
                "random u64" => mix64(i).to_le_bytes().to_vec(),
                _ => format!("10.{}.{}.{}:443", i >> 16, (i >> 8) & 255, i & 255).into_bytes(),
            };
            for i in 0..n {
                f.insert(key(i).as_slice());
            }
            let fp = (n..n + QUERIES)
                .filter(|&i| f.contains(key(i).as_slice()))
                .count() as u64;
            let s = f.shape();
            row(
                "Bloom",
                keys,
                &format!("n={n} m={} k={}", s.bits, s.hashes),
                s.fpr(n as f64),
                fp,
                QUERIES,
            );
        }
    }
    let mut sbf = Sbf::new(2_000_000, 5, 2)?;
    let records: Vec<(u64, u64)> = (0..200_000)
        .map(|i| (mix64(i), mix64(!i) % 86_400))
        .collect();
    for &(k, t) in &records {
        sbf.insert(&k, t)?;
    }
    let p = sbf.filter().estimated_fpr();
    for len in [1u64, 16, 256] {
        let q = 200_000;
        let fp = (0..q)
            .filter(|&i| sbf.query(&(u64::MAX - i), range(i, len)))
            .count() as u64;
        row(
            "SBF",
            "random u64",
            &format!("|q|={len}"),
            1.0 - (1.0 - p).powi(len as i32),
            fp,
            q,
        );
    }
    let mut pbf = Pbf2::uniform(86_400, 20_000_000, 5, 3)?;
    for &(k, t) in &records {
        pbf.insert(&k, t)?;
    }
    let level_p: Vec<f64> = (0..pbf.levels())
        .map(|l| pbf.level(l).map_or(1.0, |f| f.estimated_fpr()))
        .collect();
    for len in [16u64, 256, 4096, 65_536] {
        let q = 200_000;
        let (mut fp, mut predicted) = (0, 0.0);
        for i in 0..q {
            let r = range(i, len);
            fp += u64::from(pbf.query(&(u64::MAX - i), r));
            let none: f64 = dyadic_cover(r, pbf.levels() - 1)
                .map(|b| 1.0 - level_p[b.level as usize])
                .product();
            predicted += 1.0 - none;
        }
        row(
            "PBF-2",
            "random u64",
            &format!("|q|={len}"),
            predicted / q as f64,
            fp,
            q,
        );
    }
    Ok(())
}

fn range(i: u64, len: u64) -> TimeRange {
    let s = mix64(i ^ 0x5eed) % (86_400 - len + 1);
    TimeRange::new(s, s + len - 1).unwrap_or(TimeRange::point(s))
}

fn row(structure: &str, keys: &str, config: &str, predicted: f64, fp: u64, queries: u64) {
    let rate = fp as f64 / queries as f64;
    let half = 2.576 * (rate * (1.0 - rate) / queries as f64).sqrt();
    println!(
        "| {structure} | {keys} | {config} | {predicted:.5} | {rate:.5} | [{:.5}, {:.5}] |",
        rate - half,
        rate + half
    );
}
