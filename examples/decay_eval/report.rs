//! The report: one row per filter and budget, printed as JSON or as a table.

use serde::Serialize;

#[derive(Debug, Serialize)]
pub(crate) struct Row {
    pub(crate) filter: &'static str,
    pub(crate) bits_per_item: u64,
    /// `k` (filters) or `bph` (buffer) that minimized the total penalty.
    pub(crate) parameter: u32,
    pub(crate) total_penalty: f64,
    pub(crate) penalty_ratio: f64,
    pub(crate) vs_standard: Option<f64>,
    pub(crate) false_positives: u64,
    pub(crate) false_negatives: u64,
    pub(crate) posterior_error: Option<f64>,
    /// The recency sketch of a `btbf_inferential_recency` row.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) recency: Option<RecencyChoice>,
}

/// The recency sketch that minimized a row's total penalty, and its bits.
#[derive(Debug, Clone, Copy, Serialize)]
pub(crate) struct RecencyChoice {
    pub(crate) share: f64,
    pub(crate) period: u64,
    pub(crate) depth: u32,
    pub(crate) width: u64,
    pub(crate) counter_bits: u32,
    pub(crate) sketch_bits: u64,
    pub(crate) btbf_bits: u64,
}

#[derive(Debug, Serialize)]
pub(crate) struct Report {
    pub(crate) stream: String,
    pub(crate) window: u64,
    pub(crate) warm: u64,
    pub(crate) queries: u64,
    pub(crate) pos_neg_ratio: f64,
    pub(crate) seed: u64,
    pub(crate) rows: Vec<Row>,
}

pub(crate) fn print_table(r: &Report) {
    println!(
        "{}: w = {}, {} queries after {} warm-up, POS/NEG = {:.3}",
        r.stream, r.window, r.queries, r.warm, r.pos_neg_ratio
    );
    println!("filter                    bpi  k/bph  total_penalty  vs_prior  vs_standard        FP        FN  post_err  recency sketch");
    for row in &r.rows {
        println!(
            "{:<24} {:>4} {:>6} {:>14.0} {:>9.3} {:>12} {:>9} {:>9} {:>9}  {}",
            row.filter,
            row.bits_per_item,
            row.parameter,
            row.total_penalty,
            row.penalty_ratio,
            row.vs_standard.map_or("-".into(), |v| format!("{v:.3}")),
            row.false_positives,
            row.false_negatives,
            row.posterior_error
                .map_or("-".into(), |v| format!("{v:.4}")),
            row.recency.map_or(String::new(), |c| format!(
                "share {} H {} depth {} width {} ({} + {} bits)",
                c.share, c.period, c.depth, c.width, c.sketch_bits, c.btbf_bits
            )),
        );
    }
}
