//! Every fuzz target, by name. To add one, add a line to [`all`]: a decoder
//! `fn(&[u8]) -> Result<T, E>` becomes a target with
//! `Target::new("name", seeds, |bytes| Outcome::of(decode(bytes)))`, where `seeds` returns
//! valid encodings to mutate (`Vec::new` to grow inputs from nothing); a serde type becomes one
//! with `target::<T>("name")` once it implements `filters::Exercise`.

use super::checkpoints;
use super::filters::target;
use super::formats;
use super::harness::{Outcome, Target};
use super::seeds;
use super::traces;
use chronobloom::core::bloom::{BlockedBloomFilter, BloomFilter};
use chronobloom::core::decay::baselines::SimpleBuffer;
use chronobloom::core::decay::prior::{ConstantProbability, DistinctModel, FrequencyTable};
use chronobloom::core::decay::{
    AnswerRatePrior, Btbf, BtbfInference, Gbf, GbfInference, RecencySketch, TimerArray,
};
use chronobloom::core::matrix::{MatrixBloom, MatrixPbf};
use chronobloom::core::sketch::{CountMinSketch, FmSketch};
use chronobloom::core::temporal::{Allocation, Pbf1, Pbf2, Sbf};
use chronobloom::core::window::{
    Apbf, GenerationSlices, SlidingBloomFilter, TaggedCuckooFilter, TickFilter,
    TimeLimitedBloomFilter,
};
use chronobloom::operators::PartitionSketch;
use chronobloom::trace::{parse_duration, FlowKey};

/// The fuzz targets: trace readers first, then filter deserialization.
pub fn all() -> Vec<Target> {
    vec![
        Target::new("pcap", seeds::pcaps, traces::capture).with_edit(formats::pcap),
        Target::new("pcapng", seeds::pcapngs, traces::capture).with_edit(formats::pcapng),
        Target::new("csv", seeds::csv, traces::csv).with_edit(formats::csv),
        Target::new("packet", seeds::packets, traces::packet),
        Target::new("duration", seeds::durations, |b| {
            Outcome::of(parse_duration(&String::from_utf8_lossy(b)))
        }),
        target::<BloomFilter>("bloom"),
        target::<BlockedBloomFilter>("blocked-bloom"),
        target::<Sbf>("sbf"),
        target::<Pbf1>("pbf1"),
        target::<Pbf2>("pbf2"),
        target::<Allocation>("allocation"),
        target::<Apbf>("apbf"),
        target::<TimeLimitedBloomFilter>("time-limited"),
        target::<SlidingBloomFilter>("sliding"),
        target::<TickFilter>("tick-filter"),
        target::<TaggedCuckooFilter>("tagged-cuckoo"),
        target::<GenerationSlices>("generation-slices"),
        target::<FmSketch>("fm-sketch"),
        target::<CountMinSketch>("count-min"),
        target::<PartitionSketch>("partition-sketch"),
        target::<MatrixBloom>("matrix-bloom"),
        target::<MatrixPbf>("matrix-pbf"),
        target::<Btbf>("btbf"),
        target::<Gbf>("gbf"),
        target::<BtbfInference>("btbf-inference"),
        target::<GbfInference>("gbf-inference"),
        target::<SimpleBuffer>("simple-buffer"),
        target::<TimerArray>("timer-array"),
        target::<DistinctModel>("distinct-model"),
        target::<ConstantProbability>("constant-probability"),
        target::<FrequencyTable>("frequency-table"),
        target::<RecencySketch>("recency-sketch"),
        target::<AnswerRatePrior>("answer-rate-prior"),
        target::<FlowKey>("flow-key"),
        Target::new("checkpoint-file", checkpoints::files, checkpoints::file),
        Target::new(
            "dedup-snapshot",
            checkpoints::dedup_payloads,
            checkpoints::dedup,
        ),
        Target::new(
            "index-snapshot",
            checkpoints::index_payloads,
            checkpoints::index,
        ),
        Target::new(
            "allocator-snapshot",
            checkpoints::allocator_payloads,
            checkpoints::allocator,
        ),
        Target::new(
            "membership-snapshot",
            checkpoints::membership_payloads,
            checkpoints::membership,
        ),
    ]
}

/// The target called `name`.
pub fn by_name(name: &str) -> Option<Target> {
    all().into_iter().find(|t| t.name == name)
}
