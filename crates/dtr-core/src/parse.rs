//! Parsing of the DTR trace format (JSON lines) into a replay `Trace`.
//!
//! Every malformed input is a `TraceError` naming the file and the line. Inputs
//! outside what the reference simulator handles soundly (an alias output of an
//! operator with several arguments, two tensors with one name) are rejected
//! here rather than replayed with undefined meaning.

use crate::error::{EngineError, TraceError};
use crate::memory::MemoryGuard;
use crate::trace::{Command, Csr, Names, Op, Tensor, TensorId, Trace};
use rustc_hash::FxHashMap;
use serde::Deserialize;
use serde_json::Value;

/// Parse the text of a trace. `source` names it in error messages.
///
/// Lines are decoded in bounded batches (in parallel for large traces) and
/// consumed as the schedule is built, so the decoded form of the whole file
/// never exists at once: memory is the trace's, not a multiple of the file's.
pub fn parse_trace(source: &str, text: &str, start: bool) -> Result<Trace, TraceError> {
    parse_within(source, text, start, None).map_err(|e| match e {
        EngineError::Trace(t) => t,
        // Only a memory guard stops a parse otherwise, and there is none here.
        other => TraceError { file: source.to_string(), line: 0, message: other.to_string() },
    })
}

/// Parse a trace given as bytes: invalid UTF-8 is a `TraceError` naming the line.
pub fn parse_trace_bytes(source: &str, data: &[u8], start: bool) -> Result<Trace, TraceError> {
    parse_trace(source, utf8(source, data)?, start)
}

/// [`parse_trace_bytes`] under a memory limit: the guard is asked once per
/// batch of decoded lines and before the trace's tables are built, so a file
/// too large for the memory left stops with [`EngineError::Limit`] instead of
/// a refused allocation (which aborts the process).
pub fn parse_trace_bytes_within(
    source: &str,
    data: &[u8],
    start: bool,
    guard: Option<MemoryGuard>,
) -> Result<Trace, EngineError> {
    parse_within(source, utf8(source, data)?, start, guard)
}

fn utf8<'a>(source: &str, data: &'a [u8]) -> Result<&'a str, TraceError> {
    std::str::from_utf8(data).map_err(|e| TraceError {
        file: source.to_string(),
        line: data[..e.valid_up_to()].iter().filter(|&&c| c == b'\n').count() + 1,
        message: "not valid UTF-8 text".into(),
    })
}

fn parse_within(source: &str, text: &str, start: bool, guard: Option<MemoryGuard>) -> Result<Trace, EngineError> {
    let check = || guard.as_ref().map_or(Ok(()), MemoryGuard::check);
    let mut reader = Reader::new(source, text);
    let mut i = 0;
    if start {
        loop {
            let Some(r) = reader.at(i)? else {
                return Err(TraceError {
                    file: source.to_string(),
                    line: 0,
                    message: "start=True but the trace has no ANNOTATE START marker".into(),
                }
                .into());
            };
            i += 1;
            if r.instruction == "ANNOTATE" && r.str_field("ANNOTATION").ok() == Some("START") {
                break;
            }
            reader.consume(i);
        }
    }
    let mut b = Builder::new(source);
    let mut batches = reader.batches;
    while let Some(r) = reader.at(i)? {
        let needs = r.lines_owned();
        reader.fill(i + needs)?;
        i = b.step(&reader, i)?;
        reader.consume(i);
        if reader.batches != batches {
            batches = reader.batches;
            check()?;
        }
    }
    check()?;
    let trace = b.finish(reader.last_line)?;
    check()?;
    Ok(trace)
}

/// Decoded lines of a trace, a window at a time: `get(k)` is the record of
/// the `k`-th line (0-based, counting every line) once `fill(k + 1)` ran.
struct Reader<'a> {
    source: &'a str,
    lines: std::iter::Peekable<std::iter::Enumerate<std::str::Split<'a, char>>>,
    window: std::collections::VecDeque<Record<'a>>,
    /// Index of `window[0]`.
    first: usize,
    /// Line number of the last record decoded.
    last_line: usize,
    /// Batches decoded so far (a memory check follows each).
    batches: usize,
}

impl<'a> Reader<'a> {
    /// Lines decoded per batch: enough to keep the decoding threads busy,
    /// few enough that the window stays small.
    const BATCH: usize = 1 << 14;

    fn new(source: &'a str, text: &'a str) -> Self {
        Reader {
            source,
            lines: text.split('\n').enumerate().peekable(),
            window: std::collections::VecDeque::new(),
            first: 0,
            last_line: 0,
            batches: 0,
        }
    }

    /// Decode lines until `end` records have been read or the text ends.
    fn fill(&mut self, end: usize) -> Result<(), TraceError> {
        while self.first + self.window.len() < end {
            let mut batch: Vec<(usize, &'a str)> = Vec::new();
            while batch.len() < Self::BATCH {
                let Some((i, raw)) = self.lines.next() else { break };
                let line = raw.strip_suffix('\r').unwrap_or(raw);
                // A final newline leaves one empty piece behind: that is not a line.
                if line.is_empty() && self.lines.peek().is_none() {
                    break;
                }
                batch.push((i + 1, line));
            }
            if batch.is_empty() {
                return Ok(());
            }
            self.last_line = batch[batch.len() - 1].0;
            self.batches += 1;
            self.window.extend(read_records(self.source, &batch)?);
        }
        Ok(())
    }

    /// The record of line `k`, decoding up to it; None past the end.
    fn at(&mut self, k: usize) -> Result<Option<&Record<'a>>, TraceError> {
        self.fill(k + 1)?;
        Ok(self.get(k))
    }

    fn get(&self, k: usize) -> Option<&Record<'a>> {
        k.checked_sub(self.first).and_then(|j| self.window.get(j))
    }

    /// Records before `k` are no longer needed.
    fn consume(&mut self, k: usize) {
        while self.first < k && !self.window.is_empty() {
            self.window.pop_front();
            self.first += 1;
        }
    }
}

/// The fields of a trace line (any other key is ignored). Decoding into a
/// fixed struct avoids building a map per line.
#[derive(Deserialize, Default)]
#[serde(default)]
struct Fields {
    #[serde(rename = "INSTRUCTION")]
    instruction: Option<Value>,
    #[serde(rename = "NAME")]
    name: Option<Value>,
    #[serde(rename = "MEMORY")]
    memory: Option<Value>,
    #[serde(rename = "ALIAS")]
    alias: Option<Value>,
    #[serde(rename = "RESULT")]
    result: Option<Value>,
    #[serde(rename = "ARGS")]
    args: Option<Value>,
    #[serde(rename = "TIME")]
    time: Option<Value>,
    #[serde(rename = "MUTATE")]
    mutate: Option<Value>,
    #[serde(rename = "DST")]
    dst: Option<Value>,
    #[serde(rename = "SRC")]
    src: Option<Value>,
    #[serde(rename = "ANNOTATION")]
    annotation: Option<Value>,
}

impl Fields {
    fn get(&self, key: &str) -> Option<&Value> {
        match key {
            "INSTRUCTION" => self.instruction.as_ref(),
            "NAME" => self.name.as_ref(),
            "MEMORY" => self.memory.as_ref(),
            "ALIAS" => self.alias.as_ref(),
            "RESULT" => self.result.as_ref(),
            "ARGS" => self.args.as_ref(),
            "TIME" => self.time.as_ref(),
            "MUTATE" => self.mutate.as_ref(),
            "DST" => self.dst.as_ref(),
            "SRC" => self.src.as_ref(),
            "ANNOTATION" => self.annotation.as_ref(),
            _ => None,
        }
    }
}

/// Decode a batch of lines, on a few threads when it is large (lines are
/// independent); the first error in file order is reported.
fn read_records<'a>(source: &'a str, lines: &[(usize, &'a str)]) -> Result<Vec<Record<'a>>, TraceError> {
    const PER_THREAD: usize = 8192;
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(lines.len() / PER_THREAD).max(1);
    let decode = |part: &[(usize, &'a str)]| -> Result<Vec<Record<'a>>, TraceError> {
        part.iter().map(|&(no, line)| Record::read(source, no, line)).collect()
    };
    if threads == 1 {
        return decode(lines);
    }
    let size = lines.len().div_ceil(threads);
    let parts: Vec<Result<Vec<Record<'a>>, TraceError>> = std::thread::scope(|scope| {
        let handles: Vec<_> = lines.chunks(size).map(|part| scope.spawn(move || decode(part))).collect();
        handles.into_iter().map(|h| h.join().expect("a trace-decoding thread panicked")).collect()
    });
    let mut records = Vec::with_capacity(lines.len());
    for part in parts {
        records.extend(part?);
    }
    Ok(records)
}

/// One JSON line with its instruction.
struct Record<'a> {
    line: usize,
    instruction: String,
    fields: Fields,
    source: &'a str,
}

impl<'a> Record<'a> {
    fn read(source: &'a str, line: usize, text: &str) -> Result<Record<'a>, TraceError> {
        let err = |m: String| TraceError { file: source.to_string(), line, message: m };
        if text.trim().is_empty() {
            return Err(err("empty line".into()));
        }
        // (serde would also accept a JSON array as a struct: only objects are lines)
        let parsed = if text.trim_start().starts_with('{') { serde_json::from_str(text).ok() } else { None };
        let fields: Fields = match parsed {
            Some(f) => f,
            None => {
                // Decode again generically only to say precisely what is wrong.
                let value: Value =
                    serde_json::from_str(text).map_err(|e| err(format!("not valid JSON ({e})")))?;
                return Err(err(match value {
                    Value::Object(_) => "not a valid trace line".into(),
                    _ => "a trace line must be a JSON object".into(),
                }));
            }
        };
        let instruction = match fields.get("INSTRUCTION") {
            Some(Value::String(s)) => s.clone(),
            Some(_) => return Err(err("INSTRUCTION must be a string".into())),
            None => return Err(err("missing field INSTRUCTION".into())),
        };
        const KNOWN: [&str; 9] = [
            "CONSTANT", "MEMORY", "ALIAS", "CALL", "MUTATE", "COPY", "COPY_FROM", "RELEASE",
            "ANNOTATE",
        ];
        if !KNOWN.contains(&instruction.as_str()) {
            return Err(err(format!("unknown instruction {instruction:?}")));
        }
        Ok(Record { line, instruction, fields, source })
    }

    /// How many lines, this one included, the instruction takes (a CALL's
    /// MEMORY and ALIAS lines, a CONSTANT's MEMORY line); a bad RESULT is
    /// reported by the step that reads it.
    fn lines_owned(&self) -> usize {
        match self.instruction.as_str() {
            "CONSTANT" => 2,
            "CALL" => match self.fields.get("RESULT") {
                Some(Value::Array(results)) => 1 + 2 * results.len(),
                _ => 1,
            },
            _ => 1,
        }
    }

    fn error(&self, message: impl Into<String>) -> TraceError {
        TraceError { file: self.source.to_string(), line: self.line, message: message.into() }
    }

    fn field(&self, key: &str) -> Result<&Value, TraceError> {
        self.fields
            .get(key)
            .ok_or_else(|| self.error(format!("{} is missing field {key}", self.instruction)))
    }

    fn str_field(&self, key: &str) -> Result<&str, TraceError> {
        match self.field(key)? {
            Value::String(s) => Ok(s),
            _ => Err(self.error(format!("{key} must be a string"))),
        }
    }

    fn str_list(&self, key: &str) -> Result<Vec<&str>, TraceError> {
        match self.field(key)? {
            Value::Array(items) => items
                .iter()
                .map(|v| v.as_str().ok_or_else(|| self.error(format!("{key} must list strings"))))
                .collect(),
            _ => Err(self.error(format!("{key} must be a list"))),
        }
    }

    /// A non-negative integer given as a JSON integer or a decimal string.
    fn uint(&self, key: &str) -> Result<u64, TraceError> {
        let bad = || self.error(format!("{key} must be a non-negative integer"));
        match self.field(key)? {
            Value::Number(n) => n.as_u64().ok_or_else(bad),
            Value::String(s) => {
                let t = s.trim();
                if t.is_empty() || !t.bytes().all(|c| c.is_ascii_digit()) {
                    return Err(bad());
                }
                t.parse::<u64>().map_err(|_| bad())
            }
            _ => Err(bad()),
        }
    }

    /// An integer that may be -1 (the ALIAS field).
    fn int(&self, key: &str) -> Result<i64, TraceError> {
        let bad = || self.error(format!("{key} must be an integer"));
        match self.field(key)? {
            Value::Number(n) => n.as_i64().ok_or_else(bad),
            Value::String(s) => s.trim().parse::<i64>().map_err(|_| bad()),
            _ => Err(bad()),
        }
    }

    fn uint_list(&self, key: &str) -> Result<Vec<u64>, TraceError> {
        match self.field(key)? {
            Value::Array(items) => items
                .iter()
                .map(|v| {
                    v.as_u64().ok_or_else(|| self.error(format!("{key} must list non-negative integers")))
                })
                .collect(),
            _ => Err(self.error(format!("{key} must be a list"))),
        }
    }
}

/// Builds operators, tensors and the schedule line by line.
struct Builder {
    source: String,
    ops: Vec<Op>,
    op_kinds: Vec<String>,
    op_kind_ids: FxHashMap<String, u32>,
    tensors: Vec<Tensor>,
    tensor_names: Names,
    op_inputs: Csr,
    schedule: Vec<Command>,
    schedule_lines: Vec<usize>,
    /// Every name of the trace, once: whether a tensor was created under it
    /// (names must be unique, as in the reference) and its slot in `mapped`.
    names: FxHashMap<Box<str>, NameEntry>,
    /// Tensor each mapped name refers to now, in the order the names were
    /// first mapped (re-mapping a name keeps its place).
    mapped: Vec<TensorId>,
    refs: Vec<i64>,
    /// External references per storage (root tensor id), as the replay counts them.
    ext: Vec<u64>,
    /// Sums that bound the replay's byte counts and model compute.
    all_sizes: u64,
    all_costs: u64,
    backward: bool,
}

#[derive(Clone, Copy)]
struct NameEntry {
    created: bool,
    /// Index in `Builder::mapped`, if the name was ever mapped.
    slot: Option<u32>,
}

impl Builder {
    fn new(source: &str) -> Self {
        Builder {
            source: source.to_string(),
            ops: Vec::new(),
            op_kinds: Vec::new(),
            op_kind_ids: FxHashMap::default(),
            tensors: Vec::new(),
            tensor_names: Names::default(),
            op_inputs: Csr::new(),
            schedule: Vec::new(),
            schedule_lines: Vec::new(),
            names: FxHashMap::default(),
            mapped: Vec::new(),
            refs: Vec::new(),
            ext: Vec::new(),
            all_sizes: 0,
            all_costs: 0,
            backward: false,
        }
    }

    /// Append a command, following each storage's external references as
    /// the replay will (they depend on the schedule alone, never on the
    /// budget): a release or a new reference with none left is an error of
    /// the trace, reported here with its line rather than at replay.
    fn push(&mut self, cmd: Command, line: usize) -> Result<(), TraceError> {
        let error = |b: &Self, t: TensorId, what: &str| TraceError {
            file: b.source.clone(),
            line,
            message: format!("{:?} {what}", b.tensor_names.get(t as usize)),
        };
        match cmd {
            Command::Compute(op) => {
                let o = &self.ops[op as usize];
                for t in o.first_output..o.first_output + o.n_outputs {
                    let s = self.tensors[t as usize].storage as usize;
                    self.ext[s] += 1;
                }
            }
            Command::Get { tensor, pin: false } => {
                let s = self.tensors[tensor as usize].storage as usize;
                if self.ext[s] == 0 {
                    return Err(error(self, tensor, "is referenced again after its last reference was released"));
                }
                self.ext[s] += 1;
            }
            Command::Get { pin: true, .. } => {}
            Command::Release(tensor) => {
                let s = self.tensors[tensor as usize].storage as usize;
                if self.ext[s] == 0 {
                    return Err(error(self, tensor, "is released more often than it was referenced"));
                }
                self.ext[s] -= 1;
            }
        }
        self.schedule.push(cmd);
        self.schedule_lines.push(line);
        Ok(())
    }

    fn entry(&mut self, name: &str) -> &mut NameEntry {
        if !self.names.contains_key(name) {
            self.names.insert(name.into(), NameEntry { created: false, slot: None });
        }
        self.names.get_mut(name).expect("just inserted")
    }

    fn map_name(&mut self, name: &str, t: TensorId) {
        let next = self.mapped.len() as u32;
        let e = self.entry(name);
        match e.slot {
            Some(slot) => self.mapped[slot as usize] = t,
            None => {
                e.slot = Some(next);
                self.mapped.push(t);
            }
        }
    }

    /// The tensor a name refers to now, if it is mapped.
    fn current(&self, name: &str) -> Option<TensorId> {
        self.names.get(name).and_then(|e| e.slot).map(|slot| self.mapped[slot as usize])
    }

    fn lookup(&self, r: &Record, name: &str) -> Result<TensorId, TraceError> {
        self.current(name).ok_or_else(|| r.error(format!("unknown tensor name {name:?}")))
    }

    fn kind_of(&mut self, name: &str) -> u32 {
        if let Some(&k) = self.op_kind_ids.get(name) {
            return k;
        }
        let k = self.op_kinds.len() as u32;
        self.op_kinds.push(name.to_string());
        self.op_kind_ids.insert(name.to_string(), k);
        k
    }

    /// Create an operator and its outputs. `outputs` = (name, size, alias index).
    fn make_op(
        &mut self,
        r: &Record,
        name: &str,
        cost: u64,
        inputs: Vec<TensorId>,
        outputs: &[(String, u64, i64)],
        is_constant: bool,
    ) -> Result<Vec<TensorId>, TraceError> {
        let op_id = self.ops.len() as u32;
        let first = self.tensors.len() as TensorId;
        let mut total = 0u64;
        for (k, (out_name, size, alias)) in outputs.iter().enumerate() {
            let e = self.entry(out_name);
            if e.created {
                return Err(r.error(format!("tensor name {out_name:?} is defined twice")));
            }
            e.created = true;
            self.tensor_names.push(out_name);
            let id = first + k as TensorId;
            let storage = if *alias >= 0 {
                self.tensors[inputs[*alias as usize] as usize].storage
            } else {
                id
            };
            let size = if *alias >= 0 { 0 } else { *size };
            total = total
                .checked_add(size)
                .ok_or_else(|| r.error("operator output sizes overflow 64 bits"))?;
            // Resident bytes never exceed the sum of all sizes: if it fits,
            // no byte count of the replay can wrap.
            self.all_sizes = self
                .all_sizes
                .checked_add(size)
                .ok_or_else(|| r.error("the sizes of all tensors sum past 2^64 bytes"))?;
            self.tensors.push(Tensor { op: op_id, index: k as u32, size, storage });
            self.refs.push(1);
            self.ext.push(0);
        }
        self.all_costs = self
            .all_costs
            .checked_add(cost)
            .ok_or_else(|| r.error("the costs of all operators sum past 2^64"))?;
        let kind = self.kind_of(name);
        self.ops.push(Op {
            kind,
            cost,
            first_output: first,
            n_outputs: outputs.len() as u32,
            total_size: total,
            is_constant,
            backward: self.backward,
            line: r.line,
        });
        self.op_inputs.push_list(&inputs);
        Ok((first..first + outputs.len() as TensorId).collect())
    }

    /// Handle the record at `i` (and the lines it owns); return the next index.
    fn step(&mut self, recs: &Reader, i: usize) -> Result<usize, TraceError> {
        let r = recs.get(i).expect("the reader holds the current line");
        let next_of = |what: &str, name: &str, k: usize| -> Result<&Record, TraceError> {
            let m = recs.get(k).ok_or_else(|| {
                r.error(format!("file ends before the {what} line of {name:?}"))
            })?;
            if m.instruction != what {
                return Err(m.error(format!(
                    "expected {what} for {name:?} (required after line {}), found {}",
                    r.line, m.instruction
                )));
            }
            if m.str_field("NAME")? != name {
                return Err(m.error(format!(
                    "{what} names {:?} but line {} expects {name:?}",
                    m.str_field("NAME")?,
                    r.line
                )));
            }
            Ok(m)
        };
        match r.instruction.as_str() {
            "CONSTANT" => {
                let name = r.str_field("NAME")?;
                let m = next_of("MEMORY", name, i + 1)?;
                let size = m.uint("MEMORY")?;
                let out = self.make_op(r, "constant", 0, Vec::new(), &[(name.to_string(), size, -1)], true)?;
                let op = self.ops.len() as u32 - 1;
                self.push(Command::Compute(op), r.line)?;
                self.push(Command::Get { tensor: out[0], pin: true }, r.line)?;
                self.map_name(name, out[0]);
                Ok(i + 2)
            }
            "CALL" => {
                let results = r.str_list("RESULT")?;
                if results.is_empty() {
                    return Err(r.error("an operator without outputs (RESULT is empty) is not supported"));
                }
                let op_name = r.str_field("NAME")?;
                let args = r.str_list("ARGS")?;
                let cost = r.uint("TIME")?;
                let inputs = args.iter().map(|a| self.lookup(r, a)).collect::<Result<Vec<_>, _>>()?;
                let mut outputs = Vec::with_capacity(results.len());
                for (k, res) in results.iter().enumerate() {
                    let m = next_of("MEMORY", res, i + 1 + 2 * k)?;
                    let a = next_of("ALIAS", res, i + 2 + 2 * k)?;
                    let alias = a.int("ALIAS")?;
                    let size = if alias == -1 { m.uint("MEMORY")? } else { 0 };
                    if alias < -1 || alias >= inputs.len() as i64 {
                        return Err(a.error(format!(
                            "ALIAS {alias} of {res:?} is not -1 or an argument index of {op_name:?}"
                        )));
                    }
                    if alias >= 0 && (inputs.len() != 1 || alias != 0) {
                        return Err(a.error(format!(
                            "{res:?} aliases argument {alias} of {op_name:?}, which has {} \
                             arguments; only views of a single-argument operator are supported",
                            inputs.len()
                        )));
                    }
                    outputs.push((res.to_string(), size, alias));
                }
                if op_name.contains("backward") {
                    self.backward = true;
                }
                for res in &results {
                    if self.current(res).is_some() {
                        return Err(r.error(format!("result {res:?} is already a live name")));
                    }
                }
                let outs = self.make_op(r, op_name, cost, inputs, &outputs, false)?;
                let op = self.ops.len() as u32 - 1;
                self.push(Command::Compute(op), r.line)?;
                for (res, t) in results.iter().zip(outs) {
                    self.map_name(res, t);
                }
                Ok(i + 1 + 2 * results.len())
            }
            "MUTATE" => {
                let op_name = r.str_field("NAME")?;
                let args = r.str_list("ARGS")?;
                let mutated = r.uint_list("MUTATE")?;
                if mutated.is_empty() {
                    return Err(r.error("an operator without outputs (MUTATE is empty) is not supported"));
                }
                let cost = r.uint("TIME")?;
                let inputs = args.iter().map(|a| self.lookup(r, a)).collect::<Result<Vec<_>, _>>()?;
                let mut outputs = Vec::with_capacity(mutated.len());
                for &m in &mutated {
                    let t = *inputs.get(m as usize).ok_or_else(|| {
                        r.error(format!("MUTATE index {m} is out of range for {} arguments", inputs.len()))
                    })?;
                    let size = self.tensors[self.tensors[t as usize].storage as usize].size;
                    outputs.push((format!("{}$", self.tensor_names.get(t as usize)), size, -1));
                }
                if op_name.contains("backward") {
                    self.backward = true;
                }
                let outs = self.make_op(r, op_name, cost, inputs.clone(), &outputs, false)?;
                let op = self.ops.len() as u32 - 1;
                self.push(Command::Compute(op), r.line)?;
                for (k, &m) in mutated.iter().enumerate() {
                    let arg = args[m as usize];
                    let old = self.current(arg).expect("an argument name is mapped");
                    self.map_name(arg, outs[k]);
                    self.refs[old as usize] -= 1;
                    self.push(Command::Release(old), r.line)?;
                }
                Ok(i + 1)
            }
            "COPY" => {
                let dst = r.str_field("DST")?;
                let src = self.lookup(r, r.str_field("SRC")?)?;
                if self.current(dst).is_some() {
                    return Err(r.error(format!("COPY destination {dst:?} is already a live name")));
                }
                self.map_name(dst, src);
                self.refs[src as usize] += 1;
                self.push(Command::Get { tensor: src, pin: false }, r.line)?;
                Ok(i + 1)
            }
            "COPY_FROM" => {
                let dst = r.str_field("DST")?;
                let old = self.lookup(r, dst)?;
                let src = self.lookup(r, r.str_field("SRC")?)?;
                self.map_name(dst, src);
                self.refs[old as usize] -= 1;
                self.refs[src as usize] += 1;
                self.push(Command::Release(old), r.line)?;
                self.push(Command::Get { tensor: src, pin: false }, r.line)?;
                Ok(i + 1)
            }
            "RELEASE" => {
                let name = r.str_field("NAME")?;
                // Releasing a name that was never defined is ignored, as in the reference.
                if let Some(t) = self.current(name) {
                    self.refs[t as usize] -= 1;
                    self.push(Command::Release(t), r.line)?;
                }
                Ok(i + 1)
            }
            "ANNOTATE" => {
                if r.str_field("ANNOTATION")? == "BACKWARD" {
                    self.backward = true;
                }
                Ok(i + 1)
            }
            "MEMORY" | "ALIAS" => Err(r.error(format!(
                "{} line without a preceding CONSTANT or CALL that needs it",
                r.instruction
            ))),
            other => Err(r.error(format!("unknown instruction {other:?}"))),
        }
    }

    /// Outputs still referenced at the end are materialized and pinned.
    fn finish(mut self, last_line: usize) -> Result<Trace, TraceError> {
        if self.ops.is_empty() {
            return Err(TraceError {
                file: self.source,
                line: 0,
                message: "the trace has no operators (it is empty, or holds only markers)".into(),
            });
        }
        let mapped = std::mem::take(&mut self.mapped);
        drop(std::mem::take(&mut self.names));
        let body_commands = self.schedule.len();
        for t in mapped {
            if self.refs[t as usize] > 0 {
                self.push(Command::Get { tensor: t, pin: true }, last_line)?;
            }
        }
        let mut trace = Trace::new(
            self.source,
            self.ops,
            self.op_kinds,
            self.tensors,
            self.tensor_names,
            self.op_inputs,
            self.schedule,
            self.schedule_lines,
        );
        trace.body_commands = body_commands;
        Ok(trace)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `n` lines the parser reads and ignores (releases of unknown names).
    fn filler(n: usize) -> String {
        (0..n).map(|i| format!("{{\"INSTRUCTION\":\"RELEASE\",\"NAME\":\"none{i}\"}}\n")).collect()
    }

    fn call_with_three_results() -> String {
        let mut s = String::from("{\"INSTRUCTION\":\"CONSTANT\",\"NAME\":\"x\"}\n");
        s += "{\"INSTRUCTION\":\"MEMORY\",\"NAME\":\"x\",\"MEMORY\":\"8\"}\n";
        s += "{\"INSTRUCTION\":\"CALL\",\"NAME\":\"f\",\"ARGS\":[\"x\"],\"RESULT\":[\"a\",\"b\",\"c\"],\"TIME\":3}\n";
        for r in ["a", "b", "c"] {
            s += &format!("{{\"INSTRUCTION\":\"MEMORY\",\"NAME\":\"{r}\",\"MEMORY\":\"4\"}}\n");
            s += &format!("{{\"INSTRUCTION\":\"ALIAS\",\"NAME\":\"{r}\",\"ALIAS\":\"-1\"}}\n");
        }
        s
    }

    #[test]
    fn an_instruction_may_straddle_decoding_batches() {
        // Every split of the CALL and its six lines across a batch boundary.
        for before in Reader::BATCH - 8..=Reader::BATCH {
            let text = filler(before) + &call_with_three_results();
            let t = parse_trace("t.log", &text, false).unwrap();
            assert_eq!(t.tensors.len(), 4, "split after {before} lines");
            assert_eq!(t.op_name(1), "f/1");
            assert_eq!((t.tensor_name(1), t.tensor_name(3)), ("a", "c"));
            assert_eq!(t.ops[1].total_size, 12);
        }
    }

    #[test]
    fn errors_past_a_batch_name_their_line() {
        let text = filler(Reader::BATCH + 10) + "{\"INSTRUCTION\":\"RELEASE\"}\n";
        let e = parse_trace("t.log", &text, false).unwrap_err();
        assert_eq!((e.line, e.message.as_str()), (Reader::BATCH + 11, "RELEASE is missing field NAME"));
        let truncated = filler(Reader::BATCH - 2) + &call_with_three_results()[..200];
        let e = parse_trace("t.log", &truncated, false).unwrap_err();
        assert!(e.line >= Reader::BATCH, "{e}");
    }

    #[test]
    fn bytes_are_checked_for_utf8_with_the_line() {
        let mut data = call_with_three_results().into_bytes();
        data.extend_from_slice(b"{\"INSTRUCTION\":\"RELEASE\",\"NAME\":\"\xff\"}\n");
        let e = parse_trace_bytes("t.log", &data, false).unwrap_err();
        assert_eq!((e.line, e.message.as_str()), (10, "not valid UTF-8 text"));
        let ok = parse_trace_bytes("t.log", call_with_three_results().as_bytes(), false).unwrap();
        assert_eq!(ok.schedule, parse_trace("t.log", &call_with_three_results(), false).unwrap().schedule);
    }

    #[test]
    fn a_name_reused_after_a_copy_is_a_new_tensor_but_not_twice() {
        // COPY names `d` without creating a tensor: a later CONSTANT may take
        // the name (as in the reference), but no tensor name is created twice.
        let mut s = call_with_three_results();
        s += "{\"INSTRUCTION\":\"COPY\",\"DST\":\"d\",\"SRC\":\"a\"}\n";
        s += "{\"INSTRUCTION\":\"CONSTANT\",\"NAME\":\"d\"}\n{\"INSTRUCTION\":\"MEMORY\",\"NAME\":\"d\",\"MEMORY\":\"1\"}\n";
        let t = parse_trace("t.log", &s, false).unwrap();
        assert_eq!(t.tensor_name(4), "d");
        s += "{\"INSTRUCTION\":\"CONSTANT\",\"NAME\":\"d\"}\n{\"INSTRUCTION\":\"MEMORY\",\"NAME\":\"d\",\"MEMORY\":\"1\"}\n";
        let e = parse_trace("t.log", &s, false).unwrap_err();
        assert_eq!(e.line, 13);
        assert!(e.message.contains("defined twice"), "{e}");
    }
}
