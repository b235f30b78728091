//! Equivalence classes of evicted storages (the EqClass heuristics): a
//! union-find whose roots carry the summed compute of their class.
//!
//! Union by size keeps every tree O(log n) deep, and `root` compresses the
//! paths it walks (the victim scan's too); which node of a class is its
//! root changes no class value.

#[derive(Debug, Clone, Default)]
pub struct EqClasses {
    parent: Vec<u32>,
    value: Vec<i128>,
    /// Nodes in the tree of each root.
    size: Vec<u32>,
}

impl EqClasses {
    /// A new singleton class with `value`; returns its node.
    pub fn make(&mut self, value: i128) -> u32 {
        let id = self.parent.len() as u32;
        self.parent.push(id);
        self.value.push(value);
        self.size.push(1);
        id
    }

    pub fn root(&mut self, mut x: u32) -> u32 {
        let mut r = x;
        while self.parent[r as usize] != r {
            r = self.parent[r as usize];
        }
        while self.parent[x as usize] != r {
            let next = self.parent[x as usize];
            self.parent[x as usize] = r;
            x = next;
        }
        r
    }

    /// Merge the classes of `a` and `b` (no-op if already one class).
    pub fn merge(&mut self, a: u32, b: u32) {
        let (mut ra, mut rb) = (self.root(a), self.root(b));
        if ra != rb {
            if self.size[ra as usize] > self.size[rb as usize] {
                std::mem::swap(&mut ra, &mut rb);
            }
            self.parent[ra as usize] = rb;
            self.value[rb as usize] += self.value[ra as usize];
            self.size[rb as usize] += self.size[ra as usize];
        }
    }

    pub fn value_of_root(&self, root: u32) -> i128 {
        self.value[root as usize]
    }

    pub fn add_to_class(&mut self, x: u32, delta: i128) {
        let r = self.root(x);
        self.value[r as usize] += delta;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merged_classes_sum_and_stay_merged() {
        let mut e = EqClasses::default();
        let (a, b, c) = (e.make(1), e.make(10), e.make(100));
        e.merge(a, b);
        e.merge(b, a);
        let r = e.root(a);
        assert_eq!(e.root(b), r);
        assert_eq!(e.value_of_root(r), 11);
        e.merge(c, a);
        e.add_to_class(b, -10);
        let r = e.root(c);
        assert_eq!(e.value_of_root(r), 101);
    }

    #[test]
    fn merging_a_chain_keeps_trees_shallow() {
        // Merging each new node into the last would make a chain 10^4 deep.
        let mut e = EqClasses::default();
        let mut last = e.make(1);
        for _ in 0..10_000 {
            let x = e.make(1);
            e.merge(last, x);
            last = x;
        }
        let depth = |e: &EqClasses, mut x: u32| {
            let mut d = 0;
            while e.parent[x as usize] != x {
                x = e.parent[x as usize];
                d += 1;
            }
            d
        };
        assert!((0..10_001).map(|x| depth(&e, x)).max().unwrap() <= 14);
        let r = e.root(0);
        assert_eq!(e.value_of_root(r), 10_001);
    }
}
