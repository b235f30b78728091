//! A replay fed one command at a time, for a runtime that executes a model
//! for real: it hands the engine the schedule up to the operator it is about
//! to run, performs the evictions and rematerializations the engine logged
//! meanwhile (the event log's new rows, in order), then runs the operator.
//!
//! `simulate` is this same session fed the whole schedule at once, so a
//! batch replay and a runtime take their decisions on one path and cannot
//! drift apart; the golden records guard both.
//!
//! What a session adds to a replay: where it stands in the schedule, how it
//! ended, and a measured offset for the budget check (a runtime whose
//! trigger is the memory it measures, not the engine's own count).

use super::{Replay, RunConfig, Stop};
use crate::error::EngineError;
use crate::events::EventLog;
use crate::outcome::{RunResult, RunStatus};
use crate::trace::Trace;

/// Where a session stands after `advance`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress {
    /// Every command asked for was replayed.
    Running,
    /// The run ended early (`Oom` or `Thrashed`) at the last command
    /// replayed; later commands are refused.
    Ended(RunStatus),
}

/// A replay in progress over `trace`.
pub struct Session<'a> {
    replay: Replay<'a>,
    /// The next schedule command to replay.
    next: usize,
    /// Why the run stopped early (an out-of-memory or thrashing outcome).
    stop: Option<Stop>,
    /// An engine error was returned: the state is not a replay's any more.
    broken: bool,
    /// The result was taken.
    finished: bool,
}

impl<'a> Session<'a> {
    pub fn new(trace: &'a Trace, cfg: &'a RunConfig) -> Result<Self, EngineError> {
        Ok(Session { replay: Replay::new(trace, cfg)?, next: 0, stop: None, broken: false, finished: false })
    }

    /// The index of the next schedule command.
    pub fn position(&self) -> usize {
        self.next
    }

    /// Replay the schedule's commands from the current position up to
    /// (excluding) `end`, or until the run ends early.
    pub fn advance(&mut self, end: usize) -> Result<Progress, EngineError> {
        self.usable()?;
        if let Some(status) = self.ended() {
            return if end <= self.next {
                Ok(Progress::Ended(status))
            } else {
                Err(EngineError::InvalidArgument(format!("the run has ended ({})", status.name())))
            };
        }
        let len = self.replay.trace.schedule.len();
        if end > len {
            return Err(EngineError::InvalidArgument(format!("command {end} is past the schedule's {len}")));
        }
        while self.next < end {
            let i = self.next;
            self.next += 1;
            match self.replay.command(i) {
                Ok(()) => {}
                Err(Stop::Error(e)) => {
                    self.broken = true;
                    return Err(e);
                }
                Err(stop) => {
                    self.stop = Some(stop);
                    return Ok(Progress::Ended(self.ended().expect("just stopped")));
                }
            }
        }
        Ok(Progress::Running)
    }

    fn usable(&self) -> Result<(), EngineError> {
        if self.broken {
            return Err(EngineError::InvalidArgument("the session stopped at an engine error".into()));
        }
        if self.finished {
            return Err(EngineError::InvalidArgument("the session's result was already taken".into()));
        }
        Ok(())
    }

    /// How the run ended, if it ended early.
    pub fn ended(&self) -> Option<RunStatus> {
        match self.stop {
            None => None,
            Some(Stop::Oom(_)) => Some(RunStatus::Oom),
            Some(Stop::Thrashed) => Some(RunStatus::Thrashed),
            Some(Stop::Error(_)) => unreachable!("errors are returned, not kept"),
        }
    }

    /// Add `offset` bytes (measured less the engine's) to every budget check
    /// from now on.
    pub fn set_memory_offset(&mut self, offset: i64) {
        self.replay.memory_offset = offset;
    }

    /// Bytes resident by the engine's count.
    pub fn memory(&self) -> u64 {
        self.replay.memory
    }

    /// The event log so far (when the configuration asks for events).
    pub fn events(&self) -> Option<&EventLog> {
        self.replay.events.as_ref()
    }

    /// Whether storage `s` is resident.
    pub fn resident(&self, s: u32) -> bool {
        self.replay.material.get(s as usize).copied().unwrap_or(false)
    }

    /// Whether storage `s` can never be evicted again (pinned or retained).
    pub fn kept_for_good(&self, s: u32) -> bool {
        let i = s as usize;
        self.replay.pinned.get(i).copied().unwrap_or(false) || self.replay.retained.get(i).copied().unwrap_or(false)
    }

    /// The external references (trace names) held on storage `s`.
    pub fn external_refs(&self, s: u32) -> u64 {
        self.replay.ref_ext.get(s as usize).copied().unwrap_or(0)
    }

    /// The result: of the whole schedule, or of the run that ended early.
    /// Commands not replayed are an error unless the run ended early; the
    /// session is done once it returns a result.
    pub fn finish(&mut self) -> Result<RunResult, EngineError> {
        self.usable()?;
        let len = self.replay.trace.schedule.len();
        if self.stop.is_none() && self.next < len {
            return Err(EngineError::InvalidArgument(format!(
                "the session is at command {} of {len}: replay the rest first",
                self.next
            )));
        }
        self.finished = true;
        self.replay.finish(self.stop.take())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::heuristic::Heuristic;
    use crate::parse::parse_trace;

    fn config(budget: Option<u64>) -> RunConfig {
        RunConfig {
            budget,
            heuristic: Heuristic::from_name("DTR").unwrap(),
            remat_limit: f64::INFINITY,
            seed: 0,
            retain: Vec::new(),
            events: true,
            self_check: true,
            eager_regions: false,
            explain: false,
            tree_from: crate::runtime::TREE_FROM,
            memory: None,
        }
    }

    /// A chain a -> b -> c -> d, all kept to the end: a budget of three
    /// storages must rematerialize.
    const CHAIN: &str = concat!(
        "{\"INSTRUCTION\":\"CONSTANT\",\"NAME\":\"x\"}\n",
        "{\"INSTRUCTION\":\"MEMORY\",\"NAME\":\"x\",\"MEMORY\":\"10\"}\n",
        "{\"INSTRUCTION\":\"CALL\",\"NAME\":\"f\",\"ARGS\":[\"x\"],\"RESULT\":[\"a\"],\"TIME\":\"5\"}\n",
        "{\"INSTRUCTION\":\"MEMORY\",\"NAME\":\"a\",\"MEMORY\":\"10\"}\n",
        "{\"INSTRUCTION\":\"ALIAS\",\"NAME\":\"a\",\"ALIAS\":\"-1\"}\n",
        "{\"INSTRUCTION\":\"CALL\",\"NAME\":\"f\",\"ARGS\":[\"a\"],\"RESULT\":[\"b\"],\"TIME\":\"5\"}\n",
        "{\"INSTRUCTION\":\"MEMORY\",\"NAME\":\"b\",\"MEMORY\":\"10\"}\n",
        "{\"INSTRUCTION\":\"ALIAS\",\"NAME\":\"b\",\"ALIAS\":\"-1\"}\n",
        "{\"INSTRUCTION\":\"CALL\",\"NAME\":\"f\",\"ARGS\":[\"b\"],\"RESULT\":[\"c\"],\"TIME\":\"5\"}\n",
        "{\"INSTRUCTION\":\"MEMORY\",\"NAME\":\"c\",\"MEMORY\":\"10\"}\n",
        "{\"INSTRUCTION\":\"ALIAS\",\"NAME\":\"c\",\"ALIAS\":\"-1\"}\n",
        "{\"INSTRUCTION\":\"CALL\",\"NAME\":\"g\",\"ARGS\":[\"a\",\"c\"],\"RESULT\":[\"d\"],\"TIME\":\"5\"}\n",
        "{\"INSTRUCTION\":\"MEMORY\",\"NAME\":\"d\",\"MEMORY\":\"10\"}\n",
        "{\"INSTRUCTION\":\"ALIAS\",\"NAME\":\"d\",\"ALIAS\":\"-1\"}\n",
    );

    #[test]
    fn a_session_fed_command_by_command_is_the_batch_replay() {
        let trace = parse_trace("chain.log", CHAIN, false).unwrap();
        for budget in [None, Some(50), Some(40), Some(30), Some(20)] {
            let cfg = config(budget);
            let batch = crate::runtime::simulate(&trace, &cfg).unwrap();
            let mut s = Session::new(&trace, &cfg).unwrap();
            let mut seen = 0;
            for i in 1..=trace.schedule.len() {
                let p = s.advance(i).unwrap();
                // The log only grows, one command's rows at a time.
                let n = s.events().unwrap().len();
                assert!(n >= seen);
                seen = n;
                if p != Progress::Running {
                    break;
                }
            }
            let one = s.finish().unwrap();
            assert_eq!(format!("{batch:?}"), format!("{one:?}"), "budget {budget:?}");
        }
    }

    #[test]
    fn an_ended_run_refuses_more_commands_and_an_unfinished_one_its_result() {
        let trace = parse_trace("chain.log", CHAIN, false).unwrap();
        let cfg = config(Some(20));
        let mut s = Session::new(&trace, &cfg).unwrap();
        assert_eq!(s.advance(trace.schedule.len()).unwrap(), Progress::Ended(RunStatus::Oom));
        let at = s.position();
        assert!(s.advance(at + 1).is_err());
        assert_eq!(s.advance(at).unwrap(), Progress::Ended(RunStatus::Oom));
        assert_eq!(s.finish().unwrap().status, RunStatus::Oom);

        let cfg = config(None);
        let mut s = Session::new(&trace, &cfg).unwrap();
        s.advance(2).unwrap();
        assert!(s.advance(trace.schedule.len() + 1).is_err());
        assert!(s.finish().is_err());
    }

    #[test]
    fn a_measured_offset_moves_the_budget_check() {
        let trace = parse_trace("chain.log", CHAIN, false).unwrap();
        // 10 bytes measured beyond the engine's at a budget of 50 decide as
        // a budget of 40 does.
        for (budget, offset) in [(50, 10), (40, 10), (60, 20)] {
            let cfg = config(Some(budget));
            let mut s = Session::new(&trace, &cfg).unwrap();
            s.set_memory_offset(offset);
            s.advance(trace.schedule.len()).unwrap();
            let measured = s.finish().unwrap();
            let plain = crate::runtime::simulate(&trace, &config(Some(budget - offset as u64))).unwrap();
            assert_eq!(measured.status, plain.status);
            assert_eq!(measured.clock, plain.clock);
            assert_eq!(measured.max_memory, plain.max_memory);
            let (a, b) = (measured.events.unwrap(), plain.events.unwrap());
            assert_eq!(a.eviction_sequence(), b.eviction_sequence());
            assert_eq!(a.tensor, b.tensor);
            assert_eq!(measured.fail.map(|f| f.over_by), plain.fail.map(|f| f.over_by));
        }
    }
}
