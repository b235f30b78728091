//! The evictable pool: storages in the order they became evictable, with O(1)
//! append and removal.
//!
//! Members sit in a vector of slots in pool order; a removal leaves a hole
//! (`HOLE`), and the slots are compacted once holes exceed a quarter of the
//! members (plus a slack), so a scan in pool order reads one contiguous array
//! with few holes (the victim scan reads every slot at every eviction; a
//! third of them were holes when compacting at half) and a compaction, after
//! at least a quarter as many removals as members, costs O(1) a removal. Each slot
//! carries a payload `P` beside it (the victim scan's key), so that what a
//! scan reads is contiguous too.

/// A slot no member occupies.
pub const HOLE: u32 = u32::MAX;

#[derive(Debug, Clone)]
pub struct Pool<P = ()> {
    /// Members in pool order, with holes.
    slots: Vec<u32>,
    /// Each slot's payload (default for a new member; left as is in holes).
    payload: Vec<P>,
    /// Per storage: its slot, or `HOLE` when it is not a member.
    at: Vec<u32>,
    len: usize,
    /// Compactions so far: slots stay where they are in between.
    compactions: u64,
}

impl<P: Copy + Default> Pool<P> {
    pub fn new(capacity: usize) -> Self {
        Pool { slots: Vec::new(), payload: Vec::new(), at: vec![HOLE; capacity], len: 0, compactions: 0 }
    }

    #[inline]
    pub fn contains(&self, s: u32) -> bool {
        self.at[s as usize] != HOLE
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Append `s` at the end; returns false if it was already a member.
    pub fn push_back(&mut self, s: u32) -> bool {
        if self.contains(s) {
            return false;
        }
        // Slot indices fit in u32: there are at most as many members as
        // storages, and holes never exceed a quarter of them plus `SLACK`.
        self.at[s as usize] = self.slots.len() as u32;
        self.slots.push(s);
        self.payload.push(P::default());
        self.len += 1;
        true
    }

    /// Remove `s`; returns false if it was not a member.
    pub fn remove(&mut self, s: u32) -> bool {
        let slot = self.at[s as usize];
        if slot == HOLE {
            return false;
        }
        self.at[s as usize] = HOLE;
        self.slots[slot as usize] = HOLE;
        self.len -= 1;
        const SLACK: usize = 64;
        if self.slots.len() > self.len + self.len / 4 + SLACK {
            self.compact();
        }
        true
    }

    /// Drop the holes, keeping pool order.
    fn compact(&mut self) {
        let mut kept = 0;
        for i in 0..self.slots.len() {
            let s = self.slots[i];
            if s != HOLE {
                self.slots[kept] = s;
                self.payload[kept] = self.payload[i];
                self.at[s as usize] = kept as u32;
                kept += 1;
            }
        }
        self.slots.truncate(kept);
        self.payload.truncate(kept);
        self.compactions += 1;
    }

    /// How often the slots were compacted: a member's slot changes only then.
    #[inline]
    pub fn compactions(&self) -> u64 {
        self.compactions
    }

    /// The slot of member `s`.
    #[inline]
    pub fn slot_of(&self, s: u32) -> usize {
        let slot = self.at[s as usize];
        assert!(slot != HOLE, "storage {s} is not in the pool");
        slot as usize
    }

    /// The slots in pool order: members and holes (`HOLE`). Valid until the
    /// pool next changes.
    #[inline]
    pub fn slots(&self) -> &[u32] {
        &self.slots
    }

    /// The payloads, slot by slot beside `slots()`.
    #[inline]
    pub fn payload(&self) -> &[P] {
        &self.payload
    }

    /// The payload of member `s`.
    #[inline]
    pub fn payload_mut(&mut self, s: u32) -> &mut P {
        let slot = self.slot_of(s);
        &mut self.payload[slot]
    }

    /// Members in pool order.
    pub fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        self.slots.iter().copied().filter(|&s| s != HOLE)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_insertion_order_through_removals() {
        let mut p: Pool = Pool::new(8);
        for s in [3, 1, 4, 5] {
            assert!(p.push_back(s));
        }
        assert!(!p.push_back(4));
        assert!(p.remove(1));
        assert!(!p.remove(1));
        p.push_back(1);
        assert!(p.remove(3));
        assert_eq!(p.iter().collect::<Vec<_>>(), vec![4, 5, 1]);
        assert_eq!(p.len(), 3);
        for s in [4, 5, 1] {
            p.remove(s);
        }
        assert!(p.is_empty());
        assert_eq!(p.iter().count(), 0);
    }

    #[test]
    fn compaction_keeps_order_and_membership() {
        // Against a plain vector model, through many compactions.
        use crate::rng::SplitMix64;
        let n = 300u32;
        // Each member's payload is its id: it must follow its member.
        let mut p: Pool<u32> = Pool::new(n as usize);
        let mut model: Vec<u32> = Vec::new();
        let mut rng = SplitMix64::new(11);
        for _ in 0..20_000 {
            let s = rng.below(n as u64) as u32;
            if rng.below(2) == 0 {
                assert_eq!(p.push_back(s), !model.contains(&s));
                if !model.contains(&s) {
                    model.push(s);
                    *p.payload_mut(s) = s;
                }
            } else {
                let i = model.iter().position(|&x| x == s);
                assert_eq!(p.remove(s), i.is_some());
                if let Some(i) = i {
                    model.remove(i);
                }
            }
            assert_eq!(p.len(), model.len());
            assert!(p.slots().len() <= 2 * p.len() + 64);
        }
        assert_eq!(p.iter().collect::<Vec<_>>(), model);
        for (&s, &x) in p.slots().iter().zip(p.payload()) {
            assert!(s == HOLE || s == x);
        }
        for s in 0..n {
            assert_eq!(p.contains(s), model.contains(&s));
        }
    }
}
