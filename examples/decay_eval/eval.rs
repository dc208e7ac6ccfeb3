//! The evaluation: every filter at every budget with the parameters that minimize its total
//! penalty, as the report's rows.

use crate::candidates::{
    BtbfCandidate, BufferCandidate, FlooredCandidate, GbfCandidate, PriorCandidate,
    RecencyCandidate, Setup, Tally,
};
use crate::report::{RecencyChoice, Report, Row};
use crate::stream::{uniform01, Stream};
use crate::{Args, PriorKind};
use chronobloom::core::decay::baselines::SimpleBuffer;
use chronobloom::core::decay::decision::Penalties;
use chronobloom::core::decay::{
    AnswerRatePrior, Btbf, BtbfInference, BtbfShape, Gbf, GbfInference, RecencySketch,
};
use chronobloom::core::hash::{mix64, KeyHash};

/// A parameter choice with its tally.
type Best<P> = (P, Tally);

/// Keeps the tally with the least penalty.
fn keep_best<P>(best: &mut Option<Best<P>>, param: P, t: Tally) {
    if best.as_ref().is_none_or(|(_, b)| t.penalty < b.penalty) {
        *best = Some((param, t));
    }
}

/// The inferential BTBF with a recency sketch in `bits` bits in all: the best over `k` and the
/// sketch's share, period and depth.
fn best_recency(
    args: &Args,
    setup: &Setup,
    bits: u64,
) -> Result<Option<Best<(u32, RecencyChoice)>>, String> {
    let mut best = None;
    for (share, period, depth) in recency_grid(args)? {
        let budget = (share * bits as f64) as u64;
        let seed = mix64(args.seed ^ 0x5ec0);
        // too few bits for one row of counters: not a candidate at this size
        let Ok(sketch) = RecencySketch::for_bits(budget, depth, period, args.prior_floor, seed)
        else {
            continue;
        };
        let btbf_bits = bits - sketch.bits();
        let choice = RecencyChoice {
            share,
            period,
            depth,
            width: sketch.width(),
            counter_bits: sketch.counter_bits(),
            sketch_bits: sketch.bits(),
            btbf_bits,
        };
        for k in 1..=args.btbf_k_max.clamp(1, 32) {
            let Ok(shape) = BtbfShape::for_bits(args.window, btbf_bits, k) else {
                continue;
            };
            let filter = Btbf::new(shape, args.seed).map_err(|e| e.to_string())?;
            let inf = BtbfInference::new(shape, setup.stream.distinct.clone());
            let (_, i) = setup.run(&mut RecencyCandidate(filter, inf, sketch.clone()));
            keep_best(&mut best, (k, choice), i);
        }
    }
    Ok(best)
}

/// The recency sketches tried, `(share, H, depth)`, each checked by [`RecencySketch::new`].
fn recency_grid(args: &Args) -> Result<Vec<(f64, u64, u32)>, String> {
    let mut grid = Vec::new();
    for &share in &args.prior_share {
        if !(share > 0.0 && share < 1.0) {
            return Err(format!("--prior-share {share} is not in (0, 1)"));
        }
        for &windows in &args.prior_period {
            if !(windows > 0.0 && windows.is_finite()) {
                return Err(format!("--prior-period {windows} is not a positive number"));
            }
            let period = ((windows * args.window as f64).round() as u64).max(1);
            for &depth in &args.prior_depth {
                RecencySketch::new(1, depth, period, args.prior_floor, 0)
                    .map_err(|e| format!("recency prior: {e}"))?;
                grid.push((share, period, depth));
            }
        }
    }
    Ok(grid)
}

pub(crate) fn evaluate(args: &Args, stream: &Stream) -> Result<Report, String> {
    let w = args.window;
    let warm = (args.warm as usize).min(stream.items.len());
    let hashes: Vec<KeyHash> = stream
        .items
        .iter()
        .map(|x| KeyHash::of(x, args.seed))
        .collect();
    let mut last = vec![u64::MAX; stream.p.len()];
    let mut truth = Vec::new();
    for (t, &x) in stream.items.iter().enumerate() {
        let t = t as u64;
        if t >= warm as u64 {
            let at = last[x as usize];
            truth.push(at != u64::MAX && t - at - 1 < w);
        }
        last[x as usize] = t;
    }
    let queries = truth.len() as u64;
    let penalties = (0..queries)
        .map(|q| {
            Penalties::new(
                1.0 + 9.0 * uniform01(args.seed ^ 0xfa, q),
                1.0 + 9.0 * uniform01(args.seed ^ 0xf7, q),
            )
        })
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| e.to_string())?;
    let positives = truth.iter().filter(|&&t| t).count() as f64;
    let setup = Setup {
        stream,
        hashes,
        warm,
        penalties,
        truth,
    };
    let has = |kind| args.prior.contains(&kind);
    if has(PriorKind::Recency) {
        recency_grid(args)?; // bad sketch parameters fail before the long runs
    }
    let (_, prior) = setup.run(&mut PriorCandidate(w));
    let mut rows = Vec::new();
    let row = |filter, bpi, param: u32, t: &Tally, standard: Option<&Tally>, posterior: bool| Row {
        filter,
        bits_per_item: bpi,
        parameter: param,
        total_penalty: t.penalty,
        penalty_ratio: t.penalty / prior.penalty,
        vs_standard: standard.map(|s| t.penalty / s.penalty),
        false_positives: t.fp,
        false_negatives: t.fn_,
        posterior_error: if posterior { t.posterior_error() } else { None },
        recency: None,
    };
    rows.push(row("prior_only", 0, 0, &prior, None, true));
    for &bpi in &args.bits_per_item {
        let bits = bpi * w;
        let (mut btbf, mut btbf_inf, mut btbf_floored, mut gbf, mut gbf_inf, mut buffer) =
            (None, None, None, None, None, None);
        for k in 1..=args.btbf_k_max.clamp(1, 32) {
            let Ok(shape) = BtbfShape::for_bits(w, bits, k) else {
                continue;
            };
            let filter = Btbf::new(shape, args.seed).map_err(|e| e.to_string())?;
            let inf = BtbfInference::new(shape, stream.distinct.clone());
            if has(PriorKind::Floored) {
                let rate = AnswerRatePrior::new(w).map_err(|e| e.to_string())?;
                let mut candidate = FlooredCandidate(filter.clone(), inf.clone(), rate);
                let (_, i) = setup.run(&mut candidate);
                keep_best(&mut btbf_floored, k, i);
            }
            let (s, i) = setup.run(&mut BtbfCandidate(filter, inf));
            keep_best(&mut btbf, k, s);
            keep_best(&mut btbf_inf, k, i);
        }
        for k in 1..=args.gbf_k_max.clamp(1, 64) {
            let filter = Gbf::new(bits, k, k, args.seed).map_err(|e| e.to_string())?;
            let inf = GbfInference::new(&filter);
            let (s, i) = setup.run(&mut GbfCandidate(filter, inf, w));
            keep_best(&mut gbf, k, s);
            keep_best(&mut gbf_inf, k, i);
        }
        for bph in 1..=32 {
            let Ok(buf) = SimpleBuffer::new(w, bits, bph, args.seed) else {
                continue;
            };
            let (_, i) = setup.run(&mut BufferCandidate(buf, stream.distinct.clone()));
            keep_best(&mut buffer, bph, i);
        }
        let missing = || format!("no BTBF or GBF shape fits {bpi} bits per item");
        let (bk, b) = btbf.ok_or_else(missing)?;
        let (bik, bi) = btbf_inf.ok_or_else(missing)?;
        let (gk, g) = gbf.ok_or_else(missing)?;
        let (gik, gi) = gbf_inf.ok_or_else(missing)?;
        rows.push(row("btbf", bpi, bk, &b, None, false));
        if has(PriorKind::Frequency) {
            rows.push(row("btbf_inferential", bpi, bik, &bi, Some(&b), true));
        }
        if let Some((fk, f)) = &btbf_floored {
            rows.push(row("btbf_inferential_floored", bpi, *fk, f, Some(&b), true));
        }
        // no row when no sketch of the grid leaves room for a BTBF at this size
        let recency = if has(PriorKind::Recency) {
            best_recency(args, &setup, bits)?
        } else {
            None
        };
        if let Some(((rk, choice), r)) = recency {
            rows.push(Row {
                recency: Some(choice),
                ..row("btbf_inferential_recency", bpi, rk, &r, Some(&b), true)
            });
        }
        rows.push(row("gbf", bpi, gk, &g, None, false));
        rows.push(row("gbf_inferential", bpi, gik, &gi, Some(&g), true));
        if let Some((bph, t)) = buffer {
            rows.push(row("buffer", bpi, bph, &t, None, true));
        }
    }
    Ok(Report {
        stream: stream.name.clone(),
        window: w,
        warm: warm as u64,
        queries,
        pos_neg_ratio: positives / (queries as f64 - positives).max(1.0),
        seed: args.seed,
        rows,
    })
}
