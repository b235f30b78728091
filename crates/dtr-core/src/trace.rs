//! The replay schedule of a trace: operators, tensors and commands, plus the
//! static adjacency the runtime walks (children, tensors per storage).
//!
//! Tensor ids are assigned in creation order, so the id of a tensor is also the
//! runtime's id and the id of a storage is the id of its root tensor.

/// Index of a tensor (and, for root tensors, of its storage).
pub type TensorId = u32;
/// Index of an operator in creation order.
pub type OpId = u32;

/// One operator of the trace (constants included).
#[derive(Debug, Clone)]
pub struct Op {
    /// Its name in the trace, as an index into `Trace::op_kinds` (the unique
    /// name `"<op name>/<k>"` is `Trace::op_name`).
    pub kind: u32,
    pub cost: u64,
    /// Outputs are the tensors `first_output .. first_output + n_outputs`.
    pub first_output: TensorId,
    pub n_outputs: u32,
    /// Sum of the output sizes (alias outputs count 0).
    pub total_size: u64,
    pub is_constant: bool,
    /// True once a `BACKWARD` marker or a backward operator has been seen.
    pub backward: bool,
    /// 1-based trace line that created the operator.
    pub line: usize,
}

/// One tensor (operator output).
#[derive(Debug, Clone)]
pub struct Tensor {
    pub op: OpId,
    /// Position among the operator's outputs.
    pub index: u32,
    /// The operator's size for this output (0 for an alias).
    pub size: u64,
    /// Root tensor id of the storage this tensor lives in.
    pub storage: TensorId,
}

/// Strings stored end to end: item `i` is `text[ends[i - 1]..ends[i]]`. One
/// allocation for all tensor names instead of one per tensor.
#[derive(Debug, Clone, Default)]
pub struct Names {
    text: String,
    ends: Vec<usize>,
}

impl Names {
    pub fn push(&mut self, name: &str) {
        self.text.push_str(name);
        self.ends.push(self.text.len());
    }

    #[inline]
    pub fn get(&self, i: usize) -> &str {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.text[start..self.ends[i]]
    }

    pub fn len(&self) -> usize {
        self.ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }
}

/// A command of the replay schedule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command {
    /// Run a model operator.
    Compute(OpId),
    /// Take a reference (`pin == false`) or materialize and pin (`pin == true`).
    Get { tensor: TensorId, pin: bool },
    /// Drop a reference.
    Release(TensorId),
}

/// Compressed adjacency lists: `items[offsets[i]..offsets[i + 1]]` belong to `i`.
#[derive(Debug, Clone, Default)]
pub struct Csr {
    offsets: Vec<u32>,
    items: Vec<TensorId>,
}

impl Csr {
    /// An empty list of lists, to be filled with `push_list` in order.
    pub fn new() -> Self {
        Csr { offsets: vec![0], items: Vec::new() }
    }

    /// Append the next list.
    pub fn push_list(&mut self, list: &[TensorId]) {
        self.items.extend_from_slice(list);
        self.offsets.push(self.items.len() as u32);
    }

    /// `n` lists from `(list, item)` pairs, each list's items in pair order
    /// (a counting sort: no per-list vectors).
    fn from_pairs(n: usize, pairs: impl Iterator<Item = (u32, TensorId)> + Clone) -> Self {
        let mut offsets = vec![0u32; n + 1];
        for (l, _) in pairs.clone() {
            offsets[l as usize + 1] += 1;
        }
        for i in 0..n {
            offsets[i + 1] += offsets[i];
        }
        let mut next = offsets.clone();
        let mut items = vec![0; offsets[n] as usize];
        for (l, x) in pairs {
            items[next[l as usize] as usize] = x;
            next[l as usize] += 1;
        }
        Csr { offsets, items }
    }

    /// Number of lists.
    pub fn len(&self) -> usize {
        self.offsets.len() - 1
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    #[inline]
    pub fn get(&self, i: TensorId) -> &[TensorId] {
        let i = i as usize;
        &self.items[self.offsets[i] as usize..self.offsets[i + 1] as usize]
    }
}

/// A parsed trace, immutable and shared by every replay.
#[derive(Debug, Clone)]
pub struct Trace {
    /// File name (for messages; never an absolute path in results).
    pub source: String,
    pub ops: Vec<Op>,
    /// Distinct operator names of the trace (`Op::kind` indexes them).
    pub op_kinds: Vec<String>,
    pub tensors: Vec<Tensor>,
    /// Name in the trace of every tensor (mutation outputs get the mutated
    /// name plus `$`), by tensor id.
    pub tensor_names: Names,
    /// Operator inputs (tensor ids, duplicates kept, in argument order).
    pub op_inputs: Csr,
    pub schedule: Vec<Command>,
    /// Trace line of each schedule command (1-based).
    pub schedule_lines: Vec<usize>,
    /// The commands the trace's lines make; the rest of the schedule
    /// materializes and pins what is still referenced at the end (they carry
    /// the last line's number).
    pub body_commands: usize,
    /// Per tensor: every output of every operator that takes it as input, in
    /// creation order (with repeats when an operator takes it twice).
    pub children: Csr,
    /// Per storage (root id): the tensors living in it, in creation order.
    pub storage_tensors: Csr,
    /// Storage-level graph for region walks (self-loops of views dropped).
    pub storage_fwd: StorageLinks,
    pub storage_rev: StorageLinks,
}

/// Per storage, its distinct neighbour storages in one direction, each with
/// the id of the tensor whose creation makes the link exist, sorted by it:
/// a walk at creation cutoff `c` reads the prefix with ids below `c`.
#[derive(Debug, Clone, Default)]
pub struct StorageLinks {
    offsets: Vec<u32>,
    /// `(activating tensor id, neighbour storage)`.
    links: Vec<(TensorId, u32)>,
}

impl StorageLinks {
    fn build(n: usize, mut pairs: Vec<(u32, TensorId, u32)>) -> Self {
        // (source, activation, target): keep the earliest link per target.
        pairs.sort_unstable_by_key(|&(s, a, t)| (s, t, a));
        pairs.dedup_by_key(|&mut (s, _, t)| (s, t));
        pairs.sort_unstable_by_key(|&(s, a, t)| (s, a, t));
        let mut offsets = vec![0u32; n + 1];
        for &(s, _, _) in &pairs {
            offsets[s as usize + 1] += 1;
        }
        for i in 0..n {
            offsets[i + 1] += offsets[i];
        }
        let links = pairs.into_iter().map(|(_, a, t)| (a, t)).collect();
        StorageLinks { offsets, links }
    }

    #[inline]
    pub fn get(&self, s: u32) -> &[(TensorId, u32)] {
        &self.links[self.offsets[s as usize] as usize..self.offsets[s as usize + 1] as usize]
    }

    /// The number of storages it has links for.
    #[inline]
    pub fn storages(&self) -> usize {
        self.offsets.len().saturating_sub(1)
    }

    /// `get` without bounds checks, for the region walks' inner loop (a
    /// seventh of a thrashing replay went to the checks).
    ///
    /// # Safety
    /// `s < self.storages()`. Every link's target is such an id (`build` takes
    /// them from the trace's tensors), so a walk checks only where it starts.
    #[inline]
    pub unsafe fn get_unchecked(&self, s: u32) -> &[(TensorId, u32)] {
        debug_assert!((s as usize) < self.storages());
        // SAFETY: `offsets` has `storages() + 1` ascending entries ending at `links.len()`.
        unsafe {
            let (a, b) = (*self.offsets.get_unchecked(s as usize), *self.offsets.get_unchecked(s as usize + 1));
            self.links.get_unchecked(a as usize..b as usize)
        }
    }
}

impl Trace {
    /// Assemble a trace and derive its adjacency.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        source: String,
        ops: Vec<Op>,
        op_kinds: Vec<String>,
        tensors: Vec<Tensor>,
        tensor_names: Names,
        op_inputs: Csr,
        schedule: Vec<Command>,
        schedule_lines: Vec<usize>,
    ) -> Self {
        let n = tensors.len();
        let outputs_of = |o: usize| ops[o].first_output..ops[o].first_output + ops[o].n_outputs;
        // Every (input, output) pair of every operator, in creation order.
        let uses = (0..ops.len()).flat_map(|o| {
            op_inputs.get(o as u32).iter().flat_map(move |&p| outputs_of(o).map(move |u| (p, u)))
        });
        let children = Csr::from_pairs(n, uses.clone());
        let storage_tensors = Csr::from_pairs(n, tensors.iter().enumerate().map(|(id, t)| (t.storage, id as TensorId)));
        // Constants are pinned as soon as they exist and never evicted: a link
        // to one could only add a resident, never-evicted storage to a frontier,
        // which no region, score or equivalence class ever uses. Leave them out.
        let constant = |s: TensorId| ops[tensors[s as usize].op as usize].is_constant;
        let mut fwd_pairs = Vec::new();
        let mut rev_pairs = Vec::new();
        for (p, u) in uses {
            let su = tensors[u as usize].storage;
            let sp = tensors[p as usize].storage;
            if sp != su && !constant(sp) && !constant(su) {
                fwd_pairs.push((sp, u, su));
                rev_pairs.push((su, u, sp));
            }
        }
        Trace {
            body_commands: schedule.len(),
            storage_fwd: StorageLinks::build(n, fwd_pairs),
            storage_rev: StorageLinks::build(n, rev_pairs),
            source,
            ops,
            op_kinds,
            tensors,
            tensor_names,
            op_inputs,
            schedule,
            schedule_lines,
            children,
            storage_tensors,
        }
    }

    /// Name in the trace of tensor `t`.
    #[inline]
    pub fn tensor_name(&self, t: TensorId) -> &str {
        self.tensor_names.get(t as usize)
    }

    /// Unique name `"<op name>/<k>"` of operator `op` (`k` = its index).
    pub fn op_name(&self, op: OpId) -> String {
        format!("{}/{}", self.op_kinds[self.ops[op as usize].kind as usize], op)
    }

    /// Inputs of the operator that produced tensor `t`.
    #[inline]
    pub fn parents(&self, t: TensorId) -> &[TensorId] {
        self.op_inputs.get(self.tensors[t as usize].op)
    }

    /// Storage size: the size of the storage's root tensor.
    #[inline]
    pub fn storage_size(&self, s: TensorId) -> u64 {
        self.tensors[s as usize].size
    }
}
