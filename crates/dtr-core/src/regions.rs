//! Evicted neighbourhoods e*(s): for each resident storage, the evicted
//! storages reachable through evicted storages only, in the forward (children)
//! and reverse (parents) direction, with the summed compute of that interior.
//!
//! Maintained incrementally exactly as the reference does: a storage's
//! regions are rebuilt when it (re)materializes, absorbed into its frontier's
//! regions when it is evicted.

use crate::trace::{TensorId, Trace};
use rustc_hash::FxHashSet;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    Forward,
    Reverse,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Region {
    pub interior: FxHashSet<u32>,
    pub frontier: FxHashSet<u32>,
    pub compute: u64,
}

/// What a region walk reads from the runtime.
pub struct GraphView<'a> {
    pub trace: &'a Trace,
    /// Tensors with ids below this have been created.
    pub created: TensorId,
    pub material: &'a [bool],
    pub compute: &'a [u64],
}

impl GraphView<'_> {
    /// Call `f` on the storage of every neighbour of every created tensor of `s`.
    #[inline]
    pub fn for_each_neighbour(&self, s: u32, dir: Direction, mut f: impl FnMut(u32)) {
        let tr = self.trace;
        for &t in tr.storage_tensors.get(s) {
            if t >= self.created {
                break;
            }
            let next: &[TensorId] = match dir {
                Direction::Forward => tr.children.get(t),
                Direction::Reverse => tr.parents(t),
            };
            for &u in next {
                if u >= self.created {
                    break; // children are in creation order
                }
                f(tr.tensors[u as usize].storage);
            }
        }
    }
}

impl Region {
    pub fn clear(&mut self) {
        self.interior.clear();
        self.frontier.clear();
        self.compute = 0;
    }

    /// Recompute from scratch for resident `base`.
    pub fn rebuild(&mut self, base: u32, dir: Direction, g: &GraphView, stack: &mut Vec<u32>) {
        self.clear();
        stack.clear();
        stack.push(base);
        while let Some(s) = stack.pop() {
            g.for_each_neighbour(s, dir, |us| {
                if g.material[us as usize] {
                    if us != base {
                        self.frontier.insert(us);
                    }
                } else if self.interior.insert(us) {
                    self.compute += g.compute[us as usize];
                    stack.push(us);
                }
            });
        }
    }

    /// Absorb the just-evicted frontier storage `s`, whose same-direction
    /// region (as it was while resident) is `s_region`.
    pub fn absorb(&mut self, s: u32, s_region: &Region, compute: &[u64]) {
        self.frontier.remove(&s);
        self.frontier.extend(s_region.frontier.iter().copied());
        // The absorbed storage itself always counts, as in the reference.
        self.compute += compute[s as usize];
        for &x in &s_region.interior {
            if x != s && self.interior.insert(x) {
                self.compute += compute[x as usize];
            }
        }
        self.interior.insert(s);
    }
}
