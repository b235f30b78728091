//! The evictable pool: storages in the order they became evictable, with O(1)
//! append and removal (an intrusive doubly linked list over storage ids).

const NIL: u32 = u32::MAX;

#[derive(Debug, Clone)]
pub struct Pool {
    prev: Vec<u32>,
    next: Vec<u32>,
    member: Vec<bool>,
    head: u32,
    tail: u32,
    len: usize,
}

impl Pool {
    pub fn new(capacity: usize) -> Self {
        Pool {
            prev: vec![NIL; capacity],
            next: vec![NIL; capacity],
            member: vec![false; capacity],
            head: NIL,
            tail: NIL,
            len: 0,
        }
    }

    #[inline]
    pub fn contains(&self, s: u32) -> bool {
        self.member[s as usize]
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Append `s` at the end; returns false if it was already a member.
    pub fn push_back(&mut self, s: u32) -> bool {
        if self.member[s as usize] {
            return false;
        }
        self.member[s as usize] = true;
        self.prev[s as usize] = self.tail;
        self.next[s as usize] = NIL;
        if self.tail == NIL {
            self.head = s;
        } else {
            self.next[self.tail as usize] = s;
        }
        self.tail = s;
        self.len += 1;
        true
    }

    /// Remove `s`; returns false if it was not a member.
    pub fn remove(&mut self, s: u32) -> bool {
        if !self.member[s as usize] {
            return false;
        }
        self.member[s as usize] = false;
        let (p, n) = (self.prev[s as usize], self.next[s as usize]);
        if p == NIL {
            self.head = n;
        } else {
            self.next[p as usize] = n;
        }
        if n == NIL {
            self.tail = p;
        } else {
            self.prev[n as usize] = p;
        }
        self.len -= 1;
        true
    }

    /// The first member, if any.
    #[inline]
    pub fn first(&self) -> Option<u32> {
        (self.head != NIL).then_some(self.head)
    }

    /// The member after `s` (a member), if any.
    #[inline]
    pub fn next_of(&self, s: u32) -> Option<u32> {
        let n = self.next[s as usize];
        (n != NIL).then_some(n)
    }

    /// Members in pool order.
    pub fn iter(&self) -> PoolIter<'_> {
        PoolIter { pool: self, at: self.head }
    }
}

pub struct PoolIter<'a> {
    pool: &'a Pool,
    at: u32,
}

impl Iterator for PoolIter<'_> {
    type Item = u32;
    #[inline]
    fn next(&mut self) -> Option<u32> {
        if self.at == NIL {
            return None;
        }
        let s = self.at;
        self.at = self.pool.next[s as usize];
        Some(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_insertion_order_through_removals() {
        let mut p = Pool::new(8);
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
}
