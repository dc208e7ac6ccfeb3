//! The item streams with their priors: synthetic uniform and Zipf streams, or a `timestamp,element`
//! CSV.

use crate::StreamKind;
use chronobloom::core::decay::prior::{harmonic, DistinctModel, FrequencyTable, SampleProbability};
use chronobloom::core::hash::{mix64, KeyHash};
use std::collections::HashMap;
use std::io::BufRead;
use std::path::PathBuf;

/// One item stream with its priors.
pub(crate) struct Stream {
    pub(crate) name: String,
    pub(crate) items: Vec<u64>,
    /// `p_x` per item id.
    pub(crate) p: Vec<f64>,
    pub(crate) distinct: DistinctModel,
}

pub(crate) fn uniform01(seed: u64, i: u64) -> f64 {
    (mix64(seed ^ mix64(i)) >> 11) as f64 / (1u64 << 53) as f64
}

pub(crate) fn synthetic(
    kind: StreamKind,
    universe: u64,
    n: u64,
    seed: u64,
) -> Result<Stream, String> {
    let u = universe as usize;
    match kind {
        StreamKind::Uniform => Ok(Stream {
            name: format!("uniform |U|={universe}"),
            items: (0..n).map(|i| mix64(seed ^ mix64(i)) % universe).collect(),
            p: vec![1.0 / universe as f64; u],
            distinct: DistinctModel::uniform(universe).map_err(|e| e.to_string())?,
        }),
        StreamKind::Zipf => {
            let h = harmonic(universe);
            let p: Vec<f64> = (1..=universe).map(|x| 1.0 / (h * x as f64)).collect();
            let mut cdf = Vec::with_capacity(u);
            let mut acc = 0.0;
            for &px in &p {
                acc += px;
                cdf.push(acc);
            }
            let items = (0..n)
                .map(|i| {
                    let r = uniform01(seed, i) * acc;
                    (cdf.partition_point(|&c| c < r).min(u - 1)) as u64
                })
                .collect();
            Ok(Stream {
                name: format!("zipf |U|={universe}"),
                items,
                p,
                distinct: DistinctModel::zipf(universe).map_err(|e| e.to_string())?,
            })
        }
    }
}

/// Reads `timestamp,element` lines; `p_x` from frequencies over the file, `D(j)` measured at
/// powers of ten (and `w`) over 8 evenly spread starts, interpolated by eq. 18 (§6.4.2).
pub(crate) fn from_csv(path: &PathBuf, window: u64) -> Result<Stream, String> {
    let file = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut ids: HashMap<String, u64> = HashMap::new();
    let mut items = Vec::new();
    for (line_no, line) in std::io::BufReader::new(file).lines().enumerate() {
        let line = line.map_err(|e| format!("{}: {e}", path.display()))?;
        if line.trim().is_empty() {
            continue;
        }
        let (ts, element) = line
            .split_once(',')
            .ok_or_else(|| format!("line {}: expected `timestamp,element`", line_no + 1))?;
        ts.trim()
            .parse::<f64>()
            .map_err(|_| format!("line {}: bad timestamp {ts:?}", line_no + 1))?;
        let next = ids.len() as u64;
        items.push(*ids.entry(element.trim().to_owned()).or_insert(next));
    }
    if items.is_empty() {
        return Err(format!("{}: no records", path.display()));
    }
    // p_x: the learned frequency table over the whole file (every queried item occurs in it)
    let mut table = FrequencyTable::new(1.0).map_err(|e| e.to_string())?;
    for &x in &items {
        table.observe(KeyHash::of(&x, 0));
    }
    let p = (0..ids.len() as u64)
        .map(|x| table.p_x(KeyHash::of(&x, 0)))
        .collect();
    let mut js: Vec<u64> = (0..7)
        .map(|e| 10u64.pow(e))
        .chain([window, 4 * window])
        .collect();
    js.retain(|&j| j < items.len() as u64);
    js.sort_unstable();
    js.dedup();
    let mut points = Vec::new();
    for &j in &js {
        let starts = 8u64;
        let span = items.len() as u64 - j;
        let mean = (0..starts)
            .map(|s| {
                let from = (span * s / starts) as usize;
                let mut seen: Vec<u64> = items[from..from + j as usize].to_vec();
                seen.sort_unstable();
                seen.dedup();
                seen.len() as f64
            })
            .sum::<f64>()
            / starts as f64;
        points.push((j as f64, mean));
    }
    let distinct = DistinctModel::measured(points).map_err(|e| e.to_string())?;
    Ok(Stream {
        name: format!("{} ({} distinct)", path.display(), ids.len()),
        items,
        p,
        distinct,
    })
}
