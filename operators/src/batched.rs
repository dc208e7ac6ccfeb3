//! Per-epoch outputs gathered by time: an epoch's capability is kept at the least timestamp of
//! its records ([`keep_least`]), and an operator that closes several epochs at once, whose
//! outputs then carry one time, sends them as one message per time instead of one per epoch.
//! Every message is counted by timely's progress tracking at its time, so a sparse input's epochs
//! closed together cost one count, not one each.

use timely::dataflow::operators::Capability;

/// Lowers `cap` to time `t` (a capability made by `at`) when `t` is earlier: an epoch's outputs go
/// out at the least timestamp of its records.
pub(crate) fn keep_least(
    cap: &mut Capability<u64>,
    t: u64,
    at: impl FnOnce(u64) -> Capability<u64>,
) {
    if *cap.time() > t {
        *cap = at(t);
    }
}

/// Items to send, kept together while they are at one time.
pub(crate) struct ByTime<D> {
    runs: Vec<(Capability<u64>, Vec<D>)>,
}

impl<D> Default for ByTime<D> {
    fn default() -> Self {
        ByTime { runs: Vec::new() }
    }
}

impl<D> ByTime<D> {
    /// Adds `items` at `cap`'s time: to the last run when it is at the same time (the capability
    /// is then dropped), as a new run otherwise.
    pub(crate) fn add(&mut self, cap: Capability<u64>, mut items: Vec<D>) {
        match self.runs.last_mut() {
            Some((c, run)) if c.time() == cap.time() => run.append(&mut items),
            _ => self.runs.push((cap, items)),
        }
    }

    /// Adds one item at `cap`'s time.
    pub(crate) fn push(&mut self, cap: Capability<u64>, item: D) {
        self.add(cap, vec![item]);
    }

    /// The runs, in the order they were added: one container per time that changed between
    /// additions.
    pub(crate) fn take(&mut self) -> std::vec::Drain<'_, (Capability<u64>, Vec<D>)> {
        self.runs.drain(..)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;
    use std::rc::Rc;
    use timely::container::CapacityContainerBuilder;
    use timely::dataflow::operators::generic::operator::source;
    use timely::dataflow::operators::Probe;

    /// Runs as `(time, items)`.
    type Runs = Vec<(u64, Vec<u32>)>;

    /// Consecutive additions at one time make one run, in order; a later time starts a new run,
    /// and an earlier time after it another (runs follow the order of addition).
    #[test]
    fn consecutive_items_at_one_time_are_one_run() {
        let runs = timely::execute_directly(|worker| {
            let seen: Rc<RefCell<Runs>> = Rc::default();
            let out = Rc::clone(&seen);
            worker.dataflow::<u64, _, _>(|scope| {
                source::<_, CapacityContainerBuilder<Vec<u32>>, _, _>(
                    scope,
                    "Runs",
                    move |cap, _| {
                        let mut cap = Some(cap);
                        move |_output| {
                            let Some(c) = cap.take() else { return };
                            let mut runs = ByTime::default();
                            runs.push(c.delayed(&5), 1u32);
                            runs.add(c.delayed(&5), vec![2, 3]);
                            runs.push(c.delayed(&9), 4);
                            runs.push(c.delayed(&5), 5);
                            runs.add(c.delayed(&5), Vec::new());
                            let taken = runs.take().map(|(at, items)| (*at.time(), items));
                            out.borrow_mut().extend(taken);
                        }
                    },
                )
                .probe();
            });
            worker.step_while(|| seen.borrow().is_empty());
            seen.take()
        });
        assert_eq!(runs, vec![(5, vec![1, 2, 3]), (9, vec![4]), (5, vec![5])]);
    }
}
