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
    /// Unique name `"<op name>/<k>"`, `k` counting every operator created so far.
    pub name: String,
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
    /// Name in the trace (mutation outputs get the mutated name plus `$`).
    pub name: String,
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
    pub fn from_lists(lists: Vec<Vec<TensorId>>) -> Self {
        let mut offsets = Vec::with_capacity(lists.len() + 1);
        let mut items = Vec::new();
        offsets.push(0);
        for l in lists {
            items.extend_from_slice(&l);
            offsets.push(items.len() as u32);
        }
        Csr { offsets, items }
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
    pub tensors: Vec<Tensor>,
    /// Operator inputs (tensor ids, duplicates kept, in argument order).
    pub op_inputs: Csr,
    pub schedule: Vec<Command>,
    /// Trace line of each schedule command (1-based).
    pub schedule_lines: Vec<usize>,
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
}

impl Trace {
    /// Assemble a trace and derive its adjacency.
    pub fn new(
        source: String,
        ops: Vec<Op>,
        tensors: Vec<Tensor>,
        op_inputs: Vec<Vec<TensorId>>,
        schedule: Vec<Command>,
        schedule_lines: Vec<usize>,
    ) -> Self {
        let n = tensors.len();
        let mut children: Vec<Vec<TensorId>> = vec![Vec::new(); n];
        for (o, inputs) in op_inputs.iter().enumerate() {
            let op = &ops[o];
            for &p in inputs {
                for k in 0..op.n_outputs {
                    children[p as usize].push(op.first_output + k);
                }
            }
        }
        let mut storage_tensors: Vec<Vec<TensorId>> = vec![Vec::new(); n];
        for (id, t) in tensors.iter().enumerate() {
            storage_tensors[t.storage as usize].push(id as TensorId);
        }
        // Constants are pinned as soon as they exist and never evicted: a link
        // to one could only add a resident, never-evicted storage to a frontier,
        // which no region, score or equivalence class ever uses. Leave them out.
        let constant = |s: TensorId| ops[tensors[s as usize].op as usize].is_constant;
        let mut fwd_pairs = Vec::new();
        let mut rev_pairs = Vec::new();
        for (o, inputs) in op_inputs.iter().enumerate() {
            let op = &ops[o];
            for u in op.first_output..op.first_output + op.n_outputs {
                let su = tensors[u as usize].storage;
                for &p in inputs {
                    let sp = tensors[p as usize].storage;
                    if sp != su && !constant(sp) && !constant(su) {
                        fwd_pairs.push((sp, u, su));
                        rev_pairs.push((su, u, sp));
                    }
                }
            }
        }
        Trace {
            storage_fwd: StorageLinks::build(n, fwd_pairs),
            storage_rev: StorageLinks::build(n, rev_pairs),
            source,
            ops,
            tensors,
            op_inputs: Csr::from_lists(op_inputs),
            schedule,
            schedule_lines,
            children: Csr::from_lists(children),
            storage_tensors: Csr::from_lists(storage_tensors),
        }
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
