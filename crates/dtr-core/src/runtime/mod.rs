//! Replay of a schedule against a byte budget (the reference's
//! `RuntimeV2EagerOptimized`): locks and pins, eager eviction on release,
//! incremental regions, victim choice, overhead cap, and the diagnostics.
//!
//! Materialization is iterative (an explicit frame stack), so chains of
//! rematerializations of any depth cannot overflow the native stack.
//!
//! The replay's state is grouped by concern: per-tensor and per-storage
//! facts (residency, locks, last access, compute), `RegionState` (the
//! evicted-neighbourhood regions and what is owed to them), `Scan` (the
//! victim choice's keys, summaries and scratch), `Counters` (what the
//! result reports) and the clock and resident bytes that every part reads.
//!
//! The replay loop, locks, materialization and eviction are here; the
//! other rooms of `Replay` are [`lazy_regions`] (which regions are stale and
//! when they are rebuilt), [`victim`] (the pool scan and scores),
//! [`key_blocks`] (the scan's summaries of its keys), [`report`]
//! (diagnostics, self-check, the result) and [`session`] (the schedule fed
//! a command at a time: what `simulate` and a real runtime both drive).

mod key_blocks;
mod lazy_regions;
mod report;
mod score_tree;
mod session;
mod victim;

pub use victim::TREE_FROM;
pub use session::{Progress, Session};

use lazy_regions::{Eager, Lazy};
use victim::{Cand, Key};

use crate::eqclass::EqClasses;
use crate::error::EngineError;
use crate::events::{EventKind, EventLog};
use crate::heuristic::Heuristic;
use crate::memory::MemoryGuard;
use crate::outcome::{Fail, RunResult};
use crate::pool::Pool;
use crate::regions::{Direction, GraphView, Marks, Region, Walk};
use crate::rng::SplitMix64;
use crate::trace::{Command, TensorId, Trace};
use std::rc::Rc;

/// What to replay and how.
#[derive(Debug, Clone)]
pub struct RunConfig {
    /// Byte budget; `None` is an infinite budget.
    pub budget: Option<u64>,
    pub heuristic: Heuristic,
    /// `remat_compute` above this stops the run as `thrashed` (+inf: no cap).
    pub remat_limit: f64,
    /// Seed of `RandomStorage`.
    pub seed: u64,
    /// Storage ids never evicted (neither chosen as victims nor eagerly evicted).
    pub retain: Vec<u32>,
    /// Record every eviction and rematerialization.
    pub events: bool,
    /// Verify invariants after every command (slow; for tests): regions equal
    /// a from-scratch rebuild, the pool is exactly the resident, unlocked,
    /// unpinned storages, and resident bytes fit the budget after an operator.
    pub self_check: bool,
    /// Rebuild every region as soon as it is marked stale and score every
    /// candidate exactly, as the reference orders the work: same results,
    /// slower; an oracle for tests of the lazy bookkeeping.
    pub eager_regions: bool,
    /// Keep with every eviction the heuristic's decision (with `events`):
    /// the victim's score and terms and the runner-up's. Off, it costs
    /// nothing; on, the runner-up is scored exactly (and regions made exact
    /// sooner, which changes no result).
    pub explain: bool,
    /// Pool size from which victims are found with the victim tree rather
    /// than the block scan (`TREE_FROM` by default; 0: always, for tests).
    pub tree_from: usize,
    /// Stop with `EngineError::Limit` once the engine holds more bytes than
    /// this allows (checked after every command and every eviction).
    pub memory: Option<MemoryGuard>,
}

/// Why a replay stopped early.
enum Stop {
    Oom(Fail),
    Thrashed,
    Error(EngineError),
}

impl From<EngineError> for Stop {
    fn from(e: EngineError) -> Self {
        Stop::Error(e)
    }
}

/// A pending `materialize(tensor)` call.
#[derive(Clone, Copy)]
struct Frame {
    tensor: TensorId,
    remat: bool,
    /// Slice of `Replay::pending` holding the parents that were undefined.
    first: usize,
    end: usize,
    /// Next undefined parent to handle.
    next: usize,
    /// A nested materialization of `pending[next]` is under way.
    awaiting: bool,
}

/// What a replay adds up as it goes, for its result and diagnostics (the
/// cap reads `remat_compute`, the event log `model_ops`; no decision reads
/// the others).
#[derive(Debug, Default)]
struct Counters {
    model_compute: u64,
    remat_compute: u64,
    max_memory: u64,
    evictions: u64,
    /// Candidates the reference would have scored (counted, not all scored).
    heuristic_evals: u64,
    peak_pinned: u64,
    depth_at_peak_pinned: u32,
    max_depth: u32,
    model_ops: u64,
    /// The largest need that fitted and the smallest that did not: the
    /// identical-budget interval.
    fit_max: Option<u64>,
    nofit_min: Option<u64>,
    bottleneck: u64,
    const_bytes: u64,
}

/// The evicted-neighbourhood regions of every storage, and what is owed to
/// them: stale rebuilds and absorbs (see `lazy_regions`).
struct RegionState {
    fwd: Vec<Region>,
    rev: Vec<Region>,
    /// Absorbs owed to a region, in order: `(evicted storage, its same-
    /// direction region at eviction)`. Applied before the region is next read,
    /// dropped if it is rebuilt first (a rebuild ignores the old content).
    /// The inputs of an owed absorb cannot change meanwhile: they are evicted
    /// storages, and rematerializing one rebuilds this region.
    owed_fwd: Vec<Vec<(u32, Rc<Region>)>>,
    owed_rev: Vec<Vec<(u32, Rc<Region>)>>,
    /// Storages that were owed absorbs since the last `settle_owed` (some
    /// may have been settled since, or listed twice).
    owed_list: Vec<u32>,
    /// Per storage, `[forward, reverse]`: whether the region is owed a
    /// rebuild, and what is known of it meanwhile (see `Lazy`). A
    /// rematerialization asks for a rebuild of every region around it, and
    /// thrashing asks again and again for the same regions; a stale region
    /// is rebuilt only when it is read, which gives the same region (see
    /// `ensure_exact`).
    lazy: Vec<[Lazy; 2]>,
    /// The stale regions (which may also hold entries already rebuilt).
    stale_list: [Vec<u32>; 2],
    /// A forward region found ahead for an evicted storage about to be
    /// made resident (`rebuild_via`), until it is (`take_region_ahead`).
    ahead: Option<(u32, Region)>,
    /// While a model operator with an evicted input is being materialized,
    /// which regions must be rebuilt before they may be read or absorbed
    /// into (see `ensure_exact`), and that operator.
    eager: Eager,
    stretch_op: Option<u32>,
    /// How often an evicted storage's compute changed (see `Region::sums_at`).
    compute_changes: u64,
}

/// The victim choice's state: the pool's keys and their summaries (the
/// blocks, and the tree while the pool is large), and the scan's scratch.
struct Scan {
    /// Victim-choice scratch: the candidates in pool order, and the
    /// positions still to score exactly.
    candidates: Vec<Cand>,
    bounded: Vec<std::cmp::Reverse<victim::Bound<u32>>>,
    /// Whether victims are chosen from the pool's keys (`victim::Key`: with
    /// regions, unless eager), and which keys must be renewed before the
    /// next scan (`Replay::touch`).
    keyed: bool,
    key_dirty: Vec<bool>,
    dirty_keys: Vec<u32>,
    /// The scan's scratch: slots that may hold the victim, with their rank.
    kept: Vec<(u32, u32)>,
    /// A pool member likely to score low at the next scan (`scan_seed`).
    hint: Option<u32>,
    /// The keys summarized a block of slots at a time (kept while keyed).
    blocks: key_blocks::KeyBlocks,
    /// The victim tree, kept while the pool is large (`victim::TREE_FROM`);
    /// boxed: the replay's hot loops never read it.
    tree: Box<score_tree::VictimTree>,
}

/// The mutable state of one replay.
struct Replay<'a> {
    trace: &'a Trace,
    cfg: &'a RunConfig,
    never_access: i64,
    // Per tensor.
    defined: Vec<bool>,
    // Per storage (indexed by root tensor id).
    material: Vec<bool>,
    ref_int: Vec<u32>,
    ref_ext: Vec<u64>,
    pinned: Vec<bool>,
    retained: Vec<bool>,
    /// Pinned or retained: resident for good once linked (see
    /// `GraphView::for_good`). Where regions are on this is `Lazy::unused`
    /// again, kept dense for the walks' inner loop, which reads it at
    /// every resident storage it reaches.
    for_good: Vec<bool>,
    last_access_int: Vec<i64>,
    compute: Vec<u64>,
    evict_count: Vec<u32>,
    /// The victim choice's state (see `victim`).
    scan: Scan,
    /// The evicted-neighbourhood regions and what is owed to them (see
    /// `lazy_regions`); empty unless the heuristic reads regions.
    regions: RegionState,
    eq: EqClasses,
    eq_node: Vec<Option<u32>>,
    pool: Pool<Key>,
    /// Bytes of pool members that may be chosen (retained storages excluded).
    evictable_bytes: u64,
    // Global.
    created: TensorId,
    memory: u64,
    /// The simulated clock: compute run so far (staleness is read from it).
    clock: u64,
    counters: Counters,
    rng: SplitMix64,
    frames: Vec<Frame>,
    pending: Vec<TensorId>,
    walk: Walk,
    marks: Marks,
    /// A second set, for walks that track two at once (`Region::absorb_all`).
    marks2: Marks,
    scratch: Vec<u32>,
    /// The walk of `take_parent_region`'s reachability check.
    reach_queue: Vec<u32>,
    events: Option<EventLog>,
    regions_on: bool,
    eq_on: bool,
    line: usize,
    /// The tensor whose materialization was requested last (what the
    /// reference's records name at an OOM, even when a nested
    /// rematerialization has already returned).
    last_requested: TensorId,
    /// Bytes measured outside the engine less the engine's own, added to
    /// every budget check (`Session::set_memory_offset`; 0 in a replay).
    memory_offset: i64,
}

/// Replay `trace` under `cfg`: a [`Session`] fed the whole schedule.
pub fn simulate(trace: &Trace, cfg: &RunConfig) -> Result<RunResult, EngineError> {
    let mut s = Session::new(trace, cfg)?;
    s.advance(trace.schedule.len())?;
    s.finish()
}

impl<'a> Replay<'a> {
    fn new(trace: &'a Trace, cfg: &'a RunConfig) -> Result<Self, EngineError> {
        let n = trace.tensors.len();
        let mut retained = vec![false; n];
        for &s in &cfg.retain {
            let ok = (s as usize) < n && trace.tensors[s as usize].storage == s;
            if !ok {
                return Err(EngineError::InvalidArgument(format!(
                    "retain: {s} is not a storage id of this trace (storage ids are root tensor ids)"
                )));
            }
            retained[s as usize] = true;
        }
        let regions_on = cfg.heuristic.needs_regions();
        let eq_on = cfg.heuristic.needs_eq_classes();
        let keyed = regions_on && !cfg.eager_regions;
        let lazy = if regions_on {
            retained.iter().map(|&r| [Lazy { unused: r, ..Lazy::default() }; 2]).collect()
        } else {
            Vec::new()
        };
        Ok(Replay {
            trace,
            cfg,
            never_access: i64::MIN,
            defined: vec![false; n],
            material: vec![false; n],
            ref_int: vec![0; n],
            ref_ext: vec![0; n],
            pinned: vec![false; n],
            for_good: retained.clone(),
            retained,
            last_access_int: vec![i64::MIN; n],
            compute: vec![0; n],
            evict_count: vec![0; n],
            scan: Scan {
                candidates: Vec::new(),
                bounded: Vec::new(),
                keyed,
                key_dirty: if keyed { vec![false; n] } else { Vec::new() },
                dirty_keys: Vec::new(),
                kept: Vec::new(),
                hint: None,
                blocks: key_blocks::KeyBlocks::default(),
                tree: Box::new(score_tree::VictimTree::new(matches!(cfg.heuristic, Heuristic::Score { size: true, .. }))),
            },
            regions: RegionState {
                fwd: if regions_on { vec![Region::default(); n] } else { Vec::new() },
                rev: if regions_on { vec![Region::default(); n] } else { Vec::new() },
                owed_fwd: if regions_on { vec![Vec::new(); n] } else { Vec::new() },
                owed_rev: if regions_on { vec![Vec::new(); n] } else { Vec::new() },
                owed_list: Vec::new(),
                lazy,
                stale_list: [Vec::new(), Vec::new()],
                ahead: None,
                eager: if cfg.eager_regions { Eager::All } else { Eager::None },
                stretch_op: None,
                compute_changes: 0,
            },
            eq: EqClasses::default(),
            eq_node: if eq_on { vec![None; n] } else { Vec::new() },
            pool: Pool::new(n),
            evictable_bytes: 0,
            created: 0,
            memory: 0,
            clock: 1,
            counters: Counters::default(),
            rng: SplitMix64::new(cfg.seed),
            frames: Vec::new(),
            pending: Vec::new(),
            walk: Walk::default(),
            marks: Marks::new(n),
            marks2: Marks::new(n),
            scratch: Vec::new(),
            reach_queue: Vec::new(),
            events: match (cfg.events, cfg.explain) {
                (false, _) => None,
                (true, false) => Some(EventLog::default()),
                (true, true) => Some(EventLog::explaining()),
            },
            regions_on,
            eq_on,
            line: 0,
            last_requested: 0,
            memory_offset: 0,
        })
    }

    fn invalid(&self, message: String) -> Stop {
        Stop::Error(EngineError::InvalidSchedule { line: self.line, message })
    }

    fn tensor_name(&self, t: TensorId) -> &str {
        self.trace.tensor_name(t)
    }

    #[inline]
    fn storage(&self, t: TensorId) -> u32 {
        self.trace.tensors[t as usize].storage
    }

    // ----- schedule -------------------------------------------------------

    /// Replay schedule command `i`, then the per-command checks.
    fn command(&mut self, i: usize) -> Result<(), Stop> {
        let trace = self.trace;
        self.line = trace.schedule_lines[i];
        match trace.schedule[i] {
            Command::Compute(op) => self.compute_op(op)?,
            Command::Get { tensor, pin: true } => self.get_pinned(tensor)?,
            Command::Get { tensor, pin: false } => self.get_ref(tensor)?,
            Command::Release(tensor) => self.release(tensor)?,
        }
        if let Some(m) = self.cfg.memory {
            m.check()?;
        }
        if self.cfg.self_check {
            self.check_invariants()?;
        }
        Ok(())
    }

    /// A model operator: create its outputs, materialize the first one.
    fn compute_op(&mut self, op: u32) -> Result<(), Stop> {
        self.counters.model_ops += 1;
        let trace = self.trace;
        let o = &trace.ops[op as usize];
        let evicted_input = |p: &TensorId| !self.material[self.storage(*p) as usize];
        if self.regions_on && trace.parents(o.first_output).iter().any(evicted_input) {
            // See `ensure_exact`.
            let outputs = o.first_output..o.first_output + o.n_outputs;
            let alias_of_evicted = outputs.clone().any(|t| {
                let s = self.storage(t);
                s != t && !self.material[s as usize]
            });
            if self.regions.eager == Eager::None {
                self.regions.eager = if alias_of_evicted { Eager::All } else { Eager::Forward };
                self.regions.stretch_op = Some(op);
            }
            // Regions marked before its links exist are rebuilt without them.
            self.flush(self.regions.eager);
            if alias_of_evicted {
                // The compute about to change is read by absorbs still
                // owed (see `settle_owed`).
                self.settle_owed();
            }
        }
        let outputs = o.first_output..o.first_output + o.n_outputs;
        self.created = outputs.end;
        for t in outputs.clone() {
            let s = self.storage(t);
            self.ref_ext[s as usize] += 1;
            if s == t {
                // A new storage.
                self.compute[s as usize] = o.cost;
                if self.eq_on {
                    self.eq_node[s as usize] = Some(self.eq.make(0));
                }
            } else if !(o.first_output..t).any(|u| self.storage(u) == s) {
                // An alias adds its operator's cost to the storage, once per operator.
                self.compute[s as usize] += o.cost;
                self.touch(s);
                if !self.material[s as usize] {
                    // Regions holding it now sum an older value (see `Region::sums_at`).
                    self.regions.compute_changes += 1;
                }
            }
            if o.is_constant {
                self.counters.const_bytes += trace.tensors[t as usize].size;
            }
        }
        let done = self.materialize(o.first_output, false);
        if !self.cfg.eager_regions {
            self.regions.eager = Eager::None;
            self.regions.stretch_op = None;
        }
        done?;
        for t in outputs {
            let s = self.storage(t);
            self.last_access_int[s as usize] = self.clock as i64;
            self.touch(s);
        }
        Ok(())
    }

    fn get_pinned(&mut self, t: TensorId) -> Result<(), Stop> {
        if !self.defined[t as usize] {
            self.materialize(t, true)?;
        }
        let s = self.storage(t);
        if !self.material[s as usize] {
            return Err(self.invalid(format!("cannot pin {:?}: its storage is not resident", self.tensor_name(t))));
        }
        if !self.pinned[s as usize] {
            self.lock(s);
            self.pinned[s as usize] = true;
            self.for_good[s as usize] = true;
            if self.regions_on {
                self.regions.lazy[s as usize].iter_mut().for_each(|l| l.unused = true);
                // Never read again (see `regions_unused`): give the memory back.
                self.regions.fwd[s as usize] = Region::default();
                self.regions.rev[s as usize] = Region::default();
                self.regions.owed_fwd[s as usize] = Vec::new();
                self.regions.owed_rev[s as usize] = Vec::new();
            }
        }
        Ok(())
    }

    /// The storage of `t`, which must still hold an external reference
    /// (`misuse` says what the schedule did otherwise).
    fn referenced_storage(&self, t: TensorId, misuse: &str) -> Result<u32, Stop> {
        let s = self.storage(t);
        if self.ref_ext[s as usize] == 0 {
            return Err(self.invalid(format!("{:?} {misuse}", self.tensor_name(t))));
        }
        Ok(s)
    }

    fn get_ref(&mut self, t: TensorId) -> Result<(), Stop> {
        let s = self.referenced_storage(t, "is referenced again after its last reference was released")?;
        self.ref_ext[s as usize] += 1;
        Ok(())
    }

    fn release(&mut self, t: TensorId) -> Result<(), Stop> {
        let s = self.referenced_storage(t, "is released more often than it was referenced")?;
        self.ref_ext[s as usize] -= 1;
        let si = s as usize;
        if self.ref_ext[si] == 0 && self.material[si] && !self.pinned[si] && !self.retained[si] {
            if self.ref_int[si] != 0 {
                return Err(self.invalid(format!("{:?} is released while locked", self.tensor_name(t))));
            }
            self.evict(s, EventKind::EagerEvict, 0);
        }
        Ok(())
    }

    // ----- locks ----------------------------------------------------------

    fn lock(&mut self, s: u32) {
        if self.ref_int[s as usize] == 0 {
            self.pool_remove(s);
        }
        self.ref_int[s as usize] += 1;
    }

    fn unlock(&mut self, s: u32) {
        self.ref_int[s as usize] -= 1;
        if self.ref_int[s as usize] == 0 {
            self.pool_push(s);
        }
    }

    fn pool_push(&mut self, s: u32) {
        if self.pool.push_back(s) {
            // A new member's key is renewed before the next scan (retained
            // ones too: their key says so).
            self.touch(s);
            let candidate = !self.retained[s as usize];
            if candidate {
                self.evictable_bytes += self.trace.storage_size(s);
            }
            if self.scan.keyed && self.scan.blocks.follows(self.pool.compactions()) {
                self.scan.blocks.entered(self.pool.slot_of(s), candidate);
            }
            if self.scan.tree.follows(self.pool.compactions()) {
                self.scan.tree.entered(self.pool.slot_of(s), candidate);
            }
        }
    }

    fn pool_remove(&mut self, s: u32) {
        if !self.pool.contains(s) {
            return;
        }
        if !self.retained[s as usize] {
            self.evictable_bytes -= self.trace.storage_size(s);
            // Before the removal, which may compact the slots.
            if self.scan.keyed && self.scan.blocks.follows(self.pool.compactions()) {
                self.scan.blocks.left(self.pool.slot_of(s));
            }
            if self.scan.tree.follows(self.pool.compactions()) {
                self.scan.tree.left(self.pool.slot_of(s));
            }
        }
        self.pool.remove(s);
    }

    /// Resident bytes that no eviction can free right now.
    #[inline]
    fn pinned_bytes(&self) -> u64 {
        self.memory - self.evictable_bytes
    }

    // ----- materialization ------------------------------------------------

    /// Compare `memory + request` with the budget, recording the comparison
    /// for the identical-budget interval.
    #[inline]
    fn fits(&mut self, request: u64) -> bool {
        let need = self.need(request);
        match self.cfg.budget {
            None => true,
            Some(b) if need <= b => {
                self.counters.fit_max = Some(self.counters.fit_max.map_or(need, |m| m.max(need)));
                true
            }
            Some(_) => {
                self.counters.nofit_min = Some(self.counters.nofit_min.map_or(need, |m| m.min(need)));
                false
            }
        }
    }

    /// What a budget check compares: resident bytes (plus the measured
    /// offset, if any) and the request.
    #[inline]
    fn need(&self, request: u64) -> u64 {
        self.memory.saturating_add_signed(self.memory_offset).saturating_add(request)
    }

    fn push_frame(&mut self, t: TensorId, remat: bool) {
        let depth = self.frames.len() as u32 + 1;
        self.last_requested = t;
        self.counters.max_depth = self.counters.max_depth.max(depth);
        let trace = self.trace;
        let clock = self.clock as i64;
        let parents = trace.parents(t);
        for &p in parents {
            let ps = self.storage(p);
            self.last_access_int[ps as usize] = clock;
            self.touch(ps);
        }
        for &p in parents {
            if self.defined[p as usize] {
                let ps = self.storage(p);
                self.lock(ps);
            }
        }
        let first = self.pending.len();
        for &p in parents {
            if !self.defined[p as usize] {
                self.pending.push(p);
            }
        }
        let end = self.pending.len();
        self.frames.push(Frame { tensor: t, remat, first, end, next: first, awaiting: false });
    }

    /// Materialize `t` (the reference's recursive `_materialize`), iteratively.
    fn materialize(&mut self, t: TensorId, remat: bool) -> Result<(), Stop> {
        let base = self.frames.len();
        self.push_frame(t, remat);
        while self.frames.len() > base {
            let top = self.frames.len() - 1;
            let Frame { tensor, remat, first, end, next, awaiting } = self.frames[top];
            if awaiting || (next < end && self.defined[self.pending[next] as usize]) {
                // The nested materialization finished, or a sibling
                // rematerialization already defined this parent: lock it.
                let f = &mut self.frames[top];
                f.awaiting = false;
                f.next += 1;
                let ps = self.storage(self.pending[next]);
                self.lock(ps);
                continue;
            }
            if next < end {
                self.frames[top].awaiting = true;
                self.push_frame(self.pending[next], true);
                continue;
            }
            self.run_operator(tensor, remat, top as u32 + 1)?;
            self.frames.pop();
            self.pending.truncate(first);
        }
        Ok(())
    }

    /// Steps 3-6 of materialize once every parent is resident and locked.
    fn run_operator(&mut self, t: TensorId, remat: bool, depth: u32) -> Result<(), Stop> {
        let trace = self.trace;
        let op = trace.tensors[t as usize].op;
        let request = trace.ops[op as usize].total_size;
        self.sample_pinned(depth);
        if !self.fits(request) {
            self.free(request, t, depth)?;
        }
        self.compute_tensor(t, remat, depth)?;
        if self.cfg.self_check && self.cfg.budget.is_some_and(|b| self.memory > b) {
            return Err(Stop::Error(EngineError::Invariant(format!(
                "resident bytes {} exceed the budget after an operator",
                self.memory
            ))));
        }
        for &p in trace.parents(t) {
            let ps = self.storage(p);
            self.unlock(ps);
        }
        if exceeds(self.counters.remat_compute, self.cfg.remat_limit) {
            return Err(Stop::Thrashed);
        }
        // Bottleneck: operator outputs plus the parents' op sizes.
        let mut need = request;
        for &p in trace.parents(t) {
            need += trace.tensors[p as usize].size;
        }
        self.counters.bottleneck = self.counters.bottleneck.max(need);
        Ok(())
    }

    /// Evict victims until `request` more bytes fit.
    fn free(&mut self, request: u64, computing: TensorId, depth: u32) -> Result<(), Stop> {
        // Stale regions of a stretch may wait to be read (see
        // `flush_before_evicting`); the eager oracle rebuilds them here.
        if self.cfg.eager_regions {
            self.flush(Eager::All);
        }
        loop {
            let Some(v) = self.choose()? else {
                self.sample_pinned(depth);
                let pinned = self.pinned_bytes();
                let budget = self.cfg.budget.unwrap_or(u64::MAX);
                return Err(Stop::Oom(Fail {
                    pinned,
                    request,
                    depth,
                    over_by: self.need(request) - budget,
                    model_op: self.counters.model_ops,
                    tensor_id: self.last_requested,
                    tensor_name: self.tensor_name(self.last_requested).to_string(),
                    computing,
                    held: self.held_storages(),
                }));
            };
            let decision = (self.cfg.explain && self.events.is_some()).then(|| self.decision(v));
            self.evict(v, EventKind::Evict, depth);
            if let (Some(d), Some(ev)) = (decision, self.events.as_mut()) {
                ev.explain_last(d);
            }
            if let Some(m) = self.cfg.memory {
                m.check()?;
            }
            if self.fits(request) {
                return Ok(());
            }
        }
    }

    /// Run the operator of `t`: the reference's `_compute`.
    fn compute_tensor(&mut self, t: TensorId, remat: bool, depth: u32) -> Result<(), Stop> {
        let overflow = || Stop::Error(EngineError::Limit("the clock passed 2^64: the run is too long to count".into()));
        let trace = self.trace;
        let ti = &trace.tensors[t as usize];
        let o = &trace.ops[ti.op as usize];
        let outputs = o.first_output..o.first_output + o.n_outputs;
        // Before: fresh storages = siblings then t whose storage is not resident.
        let mut fresh = std::mem::take(&mut self.scratch);
        fresh.clear();
        for u in outputs.clone().filter(|&u| u != t).chain(std::iter::once(t)) {
            let s = self.storage(u);
            if !self.material[s as usize] && !fresh.contains(&s) {
                fresh.push(s);
            }
        }
        let dup_bytes: u64 = outputs
            .clone()
            .filter(|&u| u != t && self.defined[u as usize])
            .map(|u| trace.tensors[u as usize].size)
            .sum();

        // Model compute fits (the parser checks the sum of all costs), but
        // rematerializations repeat costs without bound when uncapped.
        self.clock = self.clock.checked_add(o.cost).ok_or_else(overflow)?;
        self.memory += o.total_size;
        self.counters.max_memory = self.counters.max_memory.max(self.memory);
        for u in outputs {
            if u == t || !self.defined[u as usize] {
                self.defined[u as usize] = true;
                let s = self.storage(u);
                self.material[s as usize] = true;
            }
        }
        if remat {
            self.counters.remat_compute = self.counters.remat_compute.checked_add(o.cost).ok_or_else(overflow)?;
        } else {
            self.counters.model_compute += o.cost;
        }
        self.memory -= dup_bytes;
        for &s in &fresh {
            self.pool_push(s);
        }
        if remat {
            if let Some(ev) = self.events.as_mut() {
                let pinned = self.memory - self.evictable_bytes;
                let s = trace.tensors[t as usize].storage;
                ev.push(EventKind::Remat, self.counters.model_ops, depth, s, t, o.total_size, pinned, self.clock);
            }
        }
        if self.regions_on {
            self.rebuild_around(&fresh, (!remat).then_some(o.first_output));
        }
        if self.eq_on {
            for &s in &fresh {
                if let Some(node) = self.eq_node[s as usize].take() {
                    self.eq.add_to_class(node, -(self.compute[s as usize] as i128));
                }
            }
        }
        self.scratch = fresh;
        Ok(())
    }

    // ----- eviction -------------------------------------------------------

    fn evict(&mut self, s: u32, kind: EventKind, depth: u32) {
        if self.cfg.eager_regions {
            self.flush(Eager::All);
        }
        if self.regions_on && !self.regions_unused(s) {
            // Its regions are absorbed by its frontiers': they must be exact.
            self.ensure_exact(s);
        }
        match self.regions.eager {
            Eager::Forward => self.flush_before_evicting(s),
            Eager::All if !self.cfg.eager_regions => self.flush_all_before_evicting(s),
            _ => {}
        }
        let trace = self.trace;
        self.material[s as usize] = false;
        for &t in trace.storage_tensors.get(s) {
            if t >= self.created {
                break;
            }
            self.defined[t as usize] = false;
        }
        let size = trace.storage_size(s);
        self.memory -= size;
        self.pool_remove(s);
        self.counters.evictions += 1;
        self.evict_count[s as usize] += 1;
        if let Some(ev) = self.events.as_mut() {
            let pinned = self.memory - self.evictable_bytes;
            ev.push(kind, self.counters.model_ops, depth, s, s, size, pinned, self.clock);
        }
        if self.regions_on {
            let mut own_fwd = std::mem::take(&mut self.regions.fwd[s as usize]);
            let mut own_rev = std::mem::take(&mut self.regions.rev[s as usize]);
            // Outside a stretch every region owed an absorb is a walk of the
            // graph as it is now: the roots let it skip what it holds already
            // (an empty interior needs none: nothing to read).
            if self.regions.eager == Eager::None && !self.cfg.eager_regions {
                if !own_rev.frontier.is_empty() && !own_fwd.interior.is_empty() {
                    own_fwd.roots = Some(self.evicted_neighbours_one_way(s, Direction::Forward));
                }
                if !own_fwd.frontier.is_empty() && !own_rev.interior.is_empty() {
                    own_rev.roots = Some(self.evicted_neighbours_one_way(s, Direction::Reverse));
                }
            }
            let (own_fwd, own_rev) = (Rc::new(own_fwd), Rc::new(own_rev));
            for &p in &own_rev.frontier {
                if self.owes_absorbs(p, Direction::Forward) {
                    self.touch(p);
                    self.list_owed(p);
                    self.regions.owed_fwd[p as usize].push((s, own_fwd.clone()));
                }
            }
            for &c in &own_fwd.frontier {
                if self.owes_absorbs(c, Direction::Reverse) {
                    self.touch(c);
                    self.list_owed(c);
                    self.regions.owed_rev[c as usize].push((s, own_rev.clone()));
                }
            }
        }
        if self.eq_on {
            let node = self.eq.make(self.compute[s as usize] as i128);
            self.eq_node[s as usize] = Some(node);
            let mut neighbours = std::mem::take(&mut self.scratch);
            neighbours.clear();
            self.evicted_neighbours(s, &mut neighbours);
            for &n in &neighbours {
                if let Some(nn) = self.eq_node[n as usize] {
                    self.eq.merge(nn, node);
                }
            }
            self.scratch = neighbours;
        }
    }

    /// The evicted storages adjacent to `s` in `dir` (a storage may repeat).
    fn evicted_neighbours_one_way(&self, s: u32, dir: Direction) -> Box<[u32]> {
        let g = GraphView { trace: self.trace, created: self.created, material: &self.material, compute: &self.compute, for_good: &self.for_good };
        let mut out = Vec::new();
        g.for_each_neighbour(s, dir, |n| {
            if n != s && !self.material[n as usize] {
                out.push(n);
            }
        });
        out.into_boxed_slice()
    }

    /// Distinct evicted storages adjacent to `s` (parents' and children's).
    fn evicted_neighbours(&self, s: u32, out: &mut Vec<u32>) {
        let g = GraphView { trace: self.trace, created: self.created, material: &self.material, compute: &self.compute, for_good: &self.for_good };
        for dir in [Direction::Reverse, Direction::Forward] {
            g.for_each_neighbour(s, dir, |n| {
                if !self.material[n as usize] && n != s && !out.contains(&n) {
                    out.push(n);
                }
            });
        }
    }

}

/// `remat > limit` with Python's exact int-float comparison.
fn exceeds(remat: u64, limit: f64) -> bool {
    if limit.is_nan() {
        return false;
    }
    if limit == f64::INFINITY {
        return false;
    }
    if limit < 0.0 {
        return true;
    }
    if limit >= 18446744073709551616.0 {
        return false;
    }
    remat > limit.floor() as u64
}

#[cfg(test)]
mod tests {
    use super::exceeds;

    #[test]
    fn cap_comparison_is_exact() {
        assert!(!exceeds(10, 10.0));
        assert!(exceeds(11, 10.5));
        assert!(!exceeds(10, 10.5));
        assert!(!exceeds(u64::MAX, f64::INFINITY));
        assert!(exceeds(0, -1.0));
    }
}
