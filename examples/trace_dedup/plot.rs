//! `--plot`: records per second, duplicate rate, dedup memory, dedup bits per key held and
//! estimated FPR per epoch.

use plotters::prelude::*;
use std::path::Path;

/// One epoch of the whole job (all workers summed).
#[derive(Debug, Clone, Copy, Default)]
pub struct EpochPoint {
    /// Epoch start, in seconds of trace time.
    pub seconds: f64,
    /// Records per second of trace time in this epoch.
    pub rate: f64,
    /// Dropped / records in this epoch.
    pub duplicate_rate: f64,
    /// Bits held by the dedup filters at the epoch's close, in KiB.
    pub memory_kib: f64,
    /// Those bits per key the compact filters hold live (0 with the exact edge).
    pub bits_per_key: f64,
    /// Estimated false positive rate from the filters' fill (worst worker).
    pub estimated_fpr: f64,
}

type Series<'a> = (&'a str, fn(&EpochPoint) -> f64);

/// Writes a five-panel SVG of `points` to `path`.
pub fn write(
    path: &Path,
    title: &str,
    points: &[EpochPoint],
) -> Result<(), Box<dyn std::error::Error>> {
    let root = SVGBackend::new(path, (1000, 1100)).into_drawing_area();
    root.fill(&WHITE)?;
    let root = root.titled(title, ("sans-serif", 20))?;
    let panels = root.split_evenly((5, 1));
    let series: [Series; 5] = [
        ("records / s", |p| p.rate),
        ("duplicate rate", |p| p.duplicate_rate),
        ("dedup memory (KiB)", |p| p.memory_kib),
        ("dedup bits per key held", |p| p.bits_per_key),
        ("estimated FPR", |p| p.estimated_fpr),
    ];
    let x_max = points.last().map_or(1.0, |p| p.seconds.max(1.0));
    for (panel, (label, get)) in panels.iter().zip(series) {
        let y_max = points.iter().map(get).fold(0.0, f64::max).max(1e-9) * 1.1;
        let mut chart = ChartBuilder::on(panel)
            .margin(8)
            .x_label_area_size(28)
            .y_label_area_size(70)
            .caption(label, ("sans-serif", 14))
            .build_cartesian_2d(0.0..x_max, 0.0..y_max)?;
        let small = y_max < 0.01;
        chart
            .configure_mesh()
            .x_desc("trace time (s)")
            .y_label_formatter(&|v| {
                if small {
                    format!("{v:.1e}")
                } else {
                    format!("{v:.2}")
                }
            })
            .light_line_style(WHITE)
            .draw()?;
        chart.draw_series(LineSeries::new(
            points.iter().map(|p| (p.seconds, get(p))),
            &BLUE,
        ))?;
    }
    root.present()?;
    Ok(())
}
