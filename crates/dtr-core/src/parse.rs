//! Parsing of the DTR trace format (JSON lines) into a replay `Trace`.
//!
//! Every malformed input is a `TraceError` naming the file and the line. Inputs
//! outside what the reference simulator handles soundly (an alias output of an
//! operator with several arguments, two tensors with one name) are rejected
//! here rather than replayed with undefined meaning.

use crate::error::TraceError;
use crate::trace::{Command, Op, Tensor, TensorId, Trace};
use rustc_hash::{FxHashMap, FxHashSet};
use serde::Deserialize;
use serde_json::Value;

/// Parse the text of a trace. `source` names it in error messages.
pub fn parse_trace(source: &str, text: &str, start: bool) -> Result<Trace, TraceError> {
    let mut lines: Vec<(usize, &str)> = Vec::new();
    let pieces: Vec<&str> = text.split('\n').collect();
    for (i, raw) in pieces.iter().enumerate() {
        let line = raw.strip_suffix('\r').unwrap_or(raw);
        // A final newline leaves one empty piece behind: that is not a line.
        if line.is_empty() && i + 1 == pieces.len() {
            continue;
        }
        lines.push((i + 1, line));
    }
    let records = read_records(source, &lines)?;
    let mut first = 0;
    if start {
        first = records
            .iter()
            .position(|r| r.instruction == "ANNOTATE" && r.str_field("ANNOTATION").ok() == Some("START"))
            .map(|p| p + 1)
            .ok_or_else(|| TraceError {
                file: source.to_string(),
                line: 0,
                message: "start=True but the trace has no ANNOTATE START marker".into(),
            })?;
    }
    let last_line = records.last().map(|r| r.line).unwrap_or(0);
    let mut b = Builder::new(source);
    let mut i = first;
    while i < records.len() {
        i = b.step(&records, i)?;
    }
    b.finish(last_line)
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

/// Decode every line, on a few threads for large traces (lines are
/// independent); the first error in file order is reported.
fn read_records(source: &str, lines: &[(usize, &str)]) -> Result<Vec<Record>, TraceError> {
    const PER_THREAD: usize = 8192;
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(lines.len() / PER_THREAD).max(1);
    let decode = |part: &[(usize, &str)]| -> Result<Vec<Record>, TraceError> {
        part.iter().map(|&(no, line)| Record::read(source, no, line)).collect()
    };
    if threads == 1 {
        return decode(lines);
    }
    let size = lines.len().div_ceil(threads);
    let parts: Vec<Result<Vec<Record>, TraceError>> = std::thread::scope(|scope| {
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
struct Record {
    line: usize,
    instruction: String,
    fields: Fields,
    source: String,
}

impl Record {
    fn read(source: &str, line: usize, text: &str) -> Result<Record, TraceError> {
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
        Ok(Record { line, instruction, fields, source: source.to_string() })
    }

    fn error(&self, message: impl Into<String>) -> TraceError {
        TraceError { file: self.source.clone(), line: self.line, message: message.into() }
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
    tensors: Vec<Tensor>,
    op_inputs: Vec<Vec<TensorId>>,
    schedule: Vec<Command>,
    schedule_lines: Vec<usize>,
    /// Trace name -> tensor it currently refers to.
    names: FxHashMap<String, TensorId>,
    /// Names in the order they were first mapped (re-mapping keeps the place).
    name_order: Vec<String>,
    /// Every tensor name ever created (names must be unique, as in the reference).
    created_names: FxHashSet<String>,
    refs: Vec<i64>,
    backward: bool,
}

impl Builder {
    fn new(source: &str) -> Self {
        Builder {
            source: source.to_string(),
            ops: Vec::new(),
            tensors: Vec::new(),
            op_inputs: Vec::new(),
            schedule: Vec::new(),
            schedule_lines: Vec::new(),
            names: FxHashMap::default(),
            name_order: Vec::new(),
            created_names: FxHashSet::default(),
            refs: Vec::new(),
            backward: false,
        }
    }

    fn push(&mut self, cmd: Command, line: usize) {
        self.schedule.push(cmd);
        self.schedule_lines.push(line);
    }

    fn map_name(&mut self, name: &str, t: TensorId) {
        if self.names.insert(name.to_string(), t).is_none() {
            self.name_order.push(name.to_string());
        }
    }

    fn lookup(&self, r: &Record, name: &str) -> Result<TensorId, TraceError> {
        self.names
            .get(name)
            .copied()
            .ok_or_else(|| r.error(format!("unknown tensor name {name:?}")))
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
            if !self.created_names.insert(out_name.clone()) {
                return Err(r.error(format!("tensor name {out_name:?} is defined twice")));
            }
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
            self.tensors.push(Tensor { op: op_id, index: k as u32, size, storage, name: out_name.clone() });
            self.refs.push(1);
        }
        self.ops.push(Op {
            name: format!("{name}/{op_id}"),
            cost,
            first_output: first,
            n_outputs: outputs.len() as u32,
            total_size: total,
            is_constant,
            backward: self.backward,
            line: r.line,
        });
        self.op_inputs.push(inputs);
        Ok((first..first + outputs.len() as TensorId).collect())
    }

    /// Handle the record at `i` (and the lines it owns); return the next index.
    fn step(&mut self, recs: &[Record], i: usize) -> Result<usize, TraceError> {
        let r = &recs[i];
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
                self.push(Command::Compute(op), r.line);
                self.push(Command::Get { tensor: out[0], pin: true }, r.line);
                self.map_name(name, out[0]);
                Ok(i + 2)
            }
            "CALL" => {
                let results = r.str_list("RESULT")?;
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
                    if self.names.contains_key(*res) {
                        return Err(r.error(format!("result {res:?} is already a live name")));
                    }
                }
                let outs = self.make_op(r, op_name, cost, inputs, &outputs, false)?;
                let op = self.ops.len() as u32 - 1;
                self.push(Command::Compute(op), r.line);
                for (res, t) in results.iter().zip(outs) {
                    self.map_name(res, t);
                }
                Ok(i + 1 + 2 * results.len())
            }
            "MUTATE" => {
                let op_name = r.str_field("NAME")?;
                let args = r.str_list("ARGS")?;
                let mutated = r.uint_list("MUTATE")?;
                let cost = r.uint("TIME")?;
                let inputs = args.iter().map(|a| self.lookup(r, a)).collect::<Result<Vec<_>, _>>()?;
                let mut outputs = Vec::with_capacity(mutated.len());
                for &m in &mutated {
                    let t = *inputs.get(m as usize).ok_or_else(|| {
                        r.error(format!("MUTATE index {m} is out of range for {} arguments", inputs.len()))
                    })?;
                    let tensor = &self.tensors[t as usize];
                    let size = self.tensors[tensor.storage as usize].size;
                    outputs.push((format!("{}$", tensor.name), size, -1));
                }
                if op_name.contains("backward") {
                    self.backward = true;
                }
                let outs = self.make_op(r, op_name, cost, inputs.clone(), &outputs, false)?;
                let op = self.ops.len() as u32 - 1;
                self.push(Command::Compute(op), r.line);
                for (k, &m) in mutated.iter().enumerate() {
                    let arg = args[m as usize];
                    let old = self.names[arg];
                    self.map_name(arg, outs[k]);
                    self.refs[old as usize] -= 1;
                    self.push(Command::Release(old), r.line);
                }
                Ok(i + 1)
            }
            "COPY" => {
                let dst = r.str_field("DST")?;
                let src = self.lookup(r, r.str_field("SRC")?)?;
                if self.names.contains_key(dst) {
                    return Err(r.error(format!("COPY destination {dst:?} is already a live name")));
                }
                self.map_name(dst, src);
                self.refs[src as usize] += 1;
                self.push(Command::Get { tensor: src, pin: false }, r.line);
                Ok(i + 1)
            }
            "COPY_FROM" => {
                let dst = r.str_field("DST")?;
                let old = self.lookup(r, dst)?;
                let src = self.lookup(r, r.str_field("SRC")?)?;
                self.map_name(dst, src);
                self.refs[old as usize] -= 1;
                self.refs[src as usize] += 1;
                self.push(Command::Release(old), r.line);
                self.push(Command::Get { tensor: src, pin: false }, r.line);
                Ok(i + 1)
            }
            "RELEASE" => {
                let name = r.str_field("NAME")?;
                // Releasing a name that was never defined is ignored, as in the reference.
                if let Some(&t) = self.names.get(name) {
                    self.refs[t as usize] -= 1;
                    self.push(Command::Release(t), r.line);
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
        let order = std::mem::take(&mut self.name_order);
        for name in &order {
            let t = self.names[name];
            if self.refs[t as usize] > 0 {
                self.push(Command::Get { tensor: t, pin: true }, last_line);
            }
        }
        Ok(Trace::new(self.source, self.ops, self.tensors, self.op_inputs, self.schedule, self.schedule_lines))
    }
}
