"""The runtime's dispatch mode: every operator PyTorch runs in the step
passes here, and the engine decides what to evict and recompute.

Per operator call (``__torch_dispatch__``):

1. the recorder's sweep writes a ``RELEASE`` for every tensor PyTorch freed;
2. the plan gives the call's lines ahead (:mod:`dtrlab.runtime.plan`): the
   engine replays those releases (evicting storages whose last name went),
   the lines that name its inputs, then the operator itself,
   making room and rematerializing evicted inputs; the runtime performs each
   eviction and rematerialization as the engine logs it, in order
   (:mod:`dtrlab.runtime.storages`, :mod:`dtrlab.runtime.recipes`);
3. the operator runs (an in-place one over tensor lists, one tensor at a
   time, as the trace splits it);
4. the recorder writes the call's lines, which must be the plan's; the
   outputs get their homes; the ledger must equal the engine's bytes.

With ``trigger="model"`` the budget is checked against the engine's own
bytes, so every decision is the simulator's on the plan. With ``ledger`` or
``allocator`` the check reads the memory measured before each operator (the
engine's bytes plus what the measurement shows beyond them); the victims are
still the engine's.
"""

from __future__ import annotations

import weakref
from time import perf_counter_ns

import torch

from dtrlab import engine
from dtrlab.capture import flat
from dtrlab.capture.costs import roofline
from dtrlab.capture.recorder import Recorder, _written_arguments, op_name, written_names
from dtrlab.exceptions import OutOfMemory, OutsideRuntime, PlanMismatch, Thrashed
from dtrlab.runtime.memory import AllocatorPeak
from dtrlab.runtime.plan import RELEASE, OpLines, Plan
from dtrlab.runtime.recipes import Recipe, fresh_outputs, generator_state
from dtrlab.runtime.storages import Meta, Storages, storage_key

EVICT, EAGER_EVICT, REMAT = 0, 1, 2
TRIGGERS = ("model", "ledger", "allocator")


class DTRMode(Recorder):
    def __init__(self, plan: Plan, session, trigger: str = "model", measure: bool = False,
                 strict: bool = False, poll_allocator: bool = True) -> None:
        super().__init__(cost=roofline, measure=measure)
        # The ledger counts what the runtime holds: the recorder's own count
        # of live bytes (a sweep of every storage per operator) is not needed.
        self.live = _NoLiveBytes()
        #: Keys of named tensors whose Python object went: the candidates of
        #: the next sweep (instead of checking every tensor at every operator).
        self.dying: list[int] = []
        self.poll_allocator = poll_allocator or trigger == "allocator"
        self.plan = plan
        self.session = session
        self.trigger = trigger
        #: Raise at the first ledger that differs from the engine's bytes
        #: (tests), instead of counting them.
        self.strict = strict
        self.homes = Storages(plan.size)
        self.recipes: dict[int, Recipe | None] = {}
        #: What each name of the step stands for now (the engine's tensor id).
        self.names: dict[str, int] = {}
        self.weak: dict[str, weakref.ref] = {}
        self.verified = len(self.lines)
        plan.check(self.lines, 0, self.verified)
        self.allocator = AllocatorPeak()
        self.constant_bytes = 0
        self.ledger_mismatches: list[tuple[int, int, int]] = []  # (line, ledger, engine)
        self.failure: tuple[str, str] | None = None  # (status, operator)
        self.result = None
        self.calls = 0  # operator calls seen
        self.ns = {"operators": 0, "engine": 0, "recompute": 0}

    # ----- the engine ---------------------------------------------------------------
    def _advance(self, end: int, operator: str) -> None:
        s = self.session
        start = s.position
        if end <= start:
            return
        names, renames = self.names, self.plan.renames
        for i in range(start, end):
            for name, t in renames[i]:
                names[name] = t
        t0 = perf_counter_ns()
        status, events = s.advance(end)
        self.ns["engine"] += perf_counter_ns() - t0
        for kind, storage, tensor in events:
            if kind == REMAT:
                self._rematerialize(tensor)
            else:
                self.homes.evict(storage, released=kind == EAGER_EVICT)
        if status != "running":
            self._fail(status, operator)

    def _fail(self, status: str, operator: str) -> None:
        self.failure = (status, operator)
        self.result = r = self.session.finish(engine.SimResult)
        budget = self.session.budget
        if status == "oom":
            f = r.fail
            raise OutOfMemory(
                f"out of memory at {operator} (model operator {f['model_op']} of the plan, computing "
                f"{f['computing_op_name']}): budget {budget:,} B, {f['request']:,} B requested with "
                f"{f['pinned']:,} B that nothing can free, {f['over_by']:,} B over", operator, budget, r)
        raise Thrashed(f"thrashed at {operator}: rematerialization passed the overhead cap "
                       f"({r.remat_compute:,} of {r.model_compute:,} compute) at budget {budget:,} B",
                       operator, budget, r)

    def _set_trigger(self) -> None:
        if self.trigger == "model":
            return
        if self.trigger == "ledger":
            measured = self.homes.bytes
        else:  # the allocator's bytes since the step began, and the constants it had before
            measured = self.allocator.now() + self.constant_bytes
        self.session.set_memory_offset(measured - self.session.memory)

    # ----- physical work ------------------------------------------------------------
    def _view(self, t: int) -> torch.Tensor:
        return self.homes.view(t, self.plan.storage[t])

    def _rematerialize(self, t: int) -> None:
        plan, st = self.plan, self.homes
        op = plan.tensor_op[t]
        st.log.append(("remat", t))
        recipe = self.recipes.get(op)
        if recipe is None:
            # A view (or an alias of a known storage): its bytes are its base's.
            if not st.resident[plan.storage[t]]:
                raise RuntimeError(f"the view {plan.trace.tensor_name(t)} is rematerialized before its base")
            return
        t0 = perf_counter_ns()
        if recipe.target is not None:
            self._rerun_in_place(op, recipe)
        else:
            out, flat = recipe.run(self._view)
            first = plan.first_output[op]
            for i, o in enumerate(fresh_outputs(out, flat)):
                u = first + i
                s = plan.storage[u]
                if s != u or st.resident[s]:
                    continue  # an alias of its resident base, or a duplicate dropped again
                data = o.untyped_storage()
                if data.nbytes() != plan.size[s]:
                    raise RuntimeError(f"recomputing {plan.trace.tensor_name(u)} gave {data.nbytes()} bytes, "
                                       f"not {plan.size[s]}")
                st.fill(s, data)
        self.ns["recompute"] += perf_counter_ns() - t0

    def _rerun_in_place(self, op: int, recipe: Recipe) -> None:
        """An in-place operator again: its input's old bytes copied into the
        buffer of the new version, then the operator over them."""
        plan, st = self.plan, self.homes
        new = plan.storage[plan.first_output[op]]
        old_t = recipe.target
        src = st.home[plan.storage[old_t]]
        h = st.home[new]
        live = h is not None and st.live[new]
        if live:
            h.resize_(src.nbytes())
            dst = h
        else:
            dst = torch.UntypedStorage(src.nbytes(), device=src.device)
        dst.copy_(src)
        m = st.meta[old_t]
        target = torch.empty(0, dtype=m.dtype, device=m.device).set_(dst, m.offset, m.shape, m.stride)
        recipe.run(self._view, target=target)
        st.filled_in_place(new, dst, live)

    # ----- names and homes ----------------------------------------------------------
    def _lookup(self, t: torch.Tensor):
        """The recorder's entry for ``t`` (without releasing a reused address)."""
        e = self.tensors.get(t._cdata)
        return None if e is None or e.ref.expired() else e

    def _predict(self, segments: list[list[torch.Tensor]]) -> list[tuple[list[str], list[tuple[torch.Tensor, str]]]]:
        """Per segment of a call's inputs (in the recorder's naming order):
        the name each of its tensors will have, and the tensors named anew there."""
        seen: dict[int, str] = {}
        count = self.count
        tensors = self.tensors
        out = []
        for seg in segments:
            names, new = [], []
            for t in seg:
                key = t._cdata
                e = tensors.get(key)
                if e is not None and not e.ref.expired():
                    names.append(e.name)
                    continue
                name = seen.get(key)
                if name is None:
                    name = seen[key] = f"x{count}"
                    count += 1
                    new.append((t, name))
                names.append(name)
            out.append((names, new))
        return out

    def _tensor_of(self, t: torch.Tensor, new: dict[int, str]) -> int:
        """The engine's tensor id that ``t``'s name (known, or in ``new`` by
        ``_cdata``) stands for now."""
        e = self._lookup(t)
        name = e.name if e is not None else new[t._cdata]
        return self.names[name]

    def _home_inputs(self, ol: OpLines, new: list[tuple[torch.Tensor, str]]) -> None:
        """The inputs an operator call names anew: a constant's storage
        becomes its home; an alias must be of the storage it names."""
        plan, st = self.plan, self.homes
        k = ol.first
        for t, name in new:
            r = plan.record(k)
            got = r["NAME"] if r["INSTRUCTION"] == "CONSTANT" else r["RESULT"][0]
            if got != name:
                raise PlanMismatch(f"line {k + 1}: the step names {name} here, its plan {got}")
            u = self.names[name]
            st.meta[u] = Meta.of(t)
            s = plan.storage[u]
            if r["INSTRUCTION"] == "CONSTANT":
                st.adopt(s, t.untyped_storage())
                self.constant_bytes += plan.size[s]
                k += 2
            else:
                k += 3

    def _named(self, t: torch.Tensor, name: str, storage: torch.UntypedStorage) -> None:
        # The recorder names a call's outputs (and its inputs, once more):
        # outputs get their homes here.
        key = t._cdata
        self.weak[name] = weakref.ref(t, lambda _, k=key: self.dying.append(k))
        u = self.names.get(name)
        if u is None:
            raise PlanMismatch(f"the step makes {name}, which its plan does not hold here")
        st, s = self.homes, self.plan.storage[u]
        if u not in st.meta:
            st.meta[u] = Meta.of(t)
            if s == u:
                st.adopt(s, storage)

    def _resolve_inputs(self, inputs: list[torch.Tensor], ids: dict[int, int],
                        operator: str) -> dict[int, torch.Tensor]:
        """Check every input (``ids``: the engine's tensor id its name stood
        for, by ``_cdata``): resident, and its bytes the version's. Returns
        the inputs to read from their versions' homes instead (by
        ``_cdata``): those whose storage holds a later version now."""
        plan, st = self.plan, self.homes
        instead = {}
        for t in inputs:
            u = ids[t._cdata]
            s = plan.storage[u]
            storage = t.untyped_storage()
            why = st.check_read(s, st.meta.get(u) or Meta.of(t), storage) if st.writes else None
            if why is not None:
                raise OutsideRuntime(
                    f"{operator} reads {plan.trace.tensor_name(u)}, but {why}: the trace format gives each "
                    "in-place write a version of its own, PyTorch shares them")
            if not st.resident[s]:
                raise RuntimeError(f"{operator}: input {plan.trace.tensor_name(u)} is not resident (storage {s})")
            if not st.is_current(s, storage):
                instead[t._cdata] = st.view(u, s)
            elif storage.nbytes() != plan.size[s]:
                raise RuntimeError(f"{operator}: input {plan.trace.tensor_name(u)} is not resident (storage {s})")
        return instead

    # ----- the recorder's hooks -----------------------------------------------------
    def _sync(self) -> None:
        """Check the lines recorded since the last check (releases, markers).
        Their commands are replayed with the next operator's (its
        ``_advance`` covers every command before it, in order), or at the
        end of the step: one call into the engine an operator instead of
        two, and a release never runs out of memory."""
        n = len(self.lines)
        if n > self.verified:
            self.plan.check(self.lines, self.verified, n)
            self.verified = n

    def sweep(self) -> None:
        # The recorder's sweep, over the tensors whose object went (a
        # tensor's object goes with it; its release still waits until the
        # tensor itself is freed, as the recorder's check says).
        if self.dying:
            dead, pending = [], []
            for key in self.dying:
                e = self.tensors.get(key)
                if e is None:
                    continue
                (dead if e.ref.expired() else pending).append(key)
            self.dying = pending
            if len(dead) > 1:
                dead = sorted(set(dead), key=lambda k: int(self.tensors[k].name[1:]))
            for key in dead:
                self._release(key)
        self._sync()

    def annotate(self, what: str) -> None:
        super().annotate(what)
        self._sync()

    def finish(self) -> str:
        super().finish()
        if len(self.lines) != self.plan.n_lines:
            raise PlanMismatch(f"the step ended at line {len(self.lines)}, its plan at line {self.plan.n_lines}")
        self._advance(len(self.plan.kinds), "the end of the step")
        self._ledger_check()
        self.result = self.session.finish(engine.SimResult)
        self._settle()
        return self.text

    def _settle(self) -> None:
        """What the step leaves to its caller must read as PyTorch would:
        a tensor that stood for an older version than its storage holds gets
        its bytes back from that version's home."""
        plan, st = self.plan, self.homes
        for name, ref in self.weak.items():
            t = ref()
            if t is None or name not in self.names:
                continue
            u = self.names[name]
            s = plan.storage[u]
            storage = t.untyped_storage()
            if st.is_current(s, storage) or st.home[s] is None or storage_key(storage) not in st.writes:
                continue
            if storage.nbytes() == 0:
                storage.resize_(plan.size[s])
            m = st.meta[u]
            dst = torch.empty(0, dtype=m.dtype, device=m.device).set_(storage, m.offset, m.shape, m.stride)
            dst.copy_(st.view(u, s))

    def _ledger_check(self) -> None:
        if self.homes.bytes != self.session.memory:
            entry = (len(self.lines), self.homes.bytes, self.session.memory)
            if self.strict:
                raise RuntimeError(f"after line {entry[0]}: ledger {entry[1]:,} B, engine {entry[2]:,} B")
            self.ledger_mismatches.append(entry)

    # ----- operators ----------------------------------------------------------------
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        self.calls += 1
        self.sweep()
        op = op_name(func)
        written = _written_arguments(func, args, kwargs)
        inputs = flat.arguments(args, kwargs)
        start = len(self.lines)
        if written:
            out, elapsed = self._run_in_place(func, args, kwargs, op, written)
        else:
            out, elapsed = self._run_call(func, args, kwargs, op, inputs)
        self.record(func, args, kwargs, out, elapsed, inputs=inputs, written=written)
        n = len(self.lines)
        if n > start:
            self.plan.check(self.lines, start, n)
            self.verified = n
        self._ledger_check()
        if self.poll_allocator:
            self.allocator.poll()
        return out

    def _timed(self, func, args, kwargs):
        t0 = perf_counter_ns()
        out = func(*args, **kwargs)
        elapsed = perf_counter_ns() - t0
        self.ns["operators"] += elapsed
        return out, elapsed

    def _run_call(self, func, args, kwargs, op: str, inputs: list[torch.Tensor]):
        plan = self.plan
        ol = plan.op_lines(len(self.lines), "CALL", op)
        named = inputs
        if ol is not None:
            view = plan.is_view(ol)
            if view:  # the recorder names a view's base alone
                named = self._view_base(inputs, ol.args, op)
            (names, new), = self._predict([named])
            if ol.named != len(new) or not ol.args <= set(names):
                ol = None
        if ol is None:
            # The plan goes on with something else: a call that records
            # nothing (it makes no tensor). It must not read an evicted one.
            for t in inputs:
                if t.untyped_storage().nbytes() == 0 and t.numel() > 0:
                    raise OutsideRuntime(f"{op} reads an evicted tensor without making one: outside the trace")
            return self._timed(func, args, kwargs)
        self._set_trigger()
        # The lines naming its inputs and the operator itself in one go: what
        # the engine does meanwhile never touches the constants they name
        # (pinned at once), and the inputs' names stay as they were.
        self._advance(ol.through, op)
        self._home_inputs(ol, new)
        ids = {t._cdata: self.names[name] for t, name in zip(named, names)}
        op_id = plan.args[ol.before]
        if view:
            self.recipes[op_id] = None
        else:
            self.recipes[op_id] = Recipe.of(func, args, kwargs, ids, generator_state(func, args, kwargs))
        instead = self._resolve_inputs(named, ids, op)
        if instead and not view:
            args, kwargs = _substituted(args, kwargs, instead)
        return self._timed(func, args, kwargs)

    def _view_base(self, inputs: list[torch.Tensor], arg_names: frozenset[str], op: str) -> list[torch.Tensor]:
        distinct = list({t._cdata: t for t in inputs}.values())
        if len(distinct) == 1:
            return distinct
        known = [t for t in distinct if (e := self._lookup(t)) is not None and e.name in arg_names]
        unknown = [t for t in distinct if self._lookup(t) is None]
        if len(known) == 1:
            return known
        if not known and len(unknown) == 1:
            return unknown
        raise OutsideRuntime(f"{op}: a view of one of several tensors; the runtime cannot tell which")

    def _run_in_place(self, func, args, kwargs, op: str, written):
        """An in-place operator, one written tensor at a time (the trace's
        MUTATE lines), each with the arguments at its position."""
        plan, st, session = self.plan, self.homes, self.session
        per_element = len(written) > 1
        if per_element and (not op.startswith("_foreach_") or len(written_names(func)) != 1):
            raise OutsideRuntime(f"{op} writes several tensors that are not one list: the runtime cannot "
                                 "run it a tensor at a time")
        segments = [[target, *[t for t in others if t._cdata != target._cdata]] for target, others in written]
        predicted = self._predict(segments)
        fresh = {t._cdata: n for _, new in predicted for t, n in new}
        line = len(self.lines)
        outs, elapsed = [], 0
        for k, ((target, _), seg, (names, new)) in enumerate(zip(written, segments, predicted)):
            ol = plan.op_lines(line, "MUTATE", op)
            if ol is None or ol.named != len(new) or not ol.args <= set(names):
                raise PlanMismatch(f"line {line + 1}: the step writes in place with {op}, its plan says "
                                   f"{plan.lines[line] if line < plan.n_lines else 'nothing more'}")
            self._set_trigger()
            c, end = ol.before, ol.through
            self._advance(c, op)
            self._home_inputs(ol, new)
            # (Read after this element's naming lines: each name stands for what earlier elements made.)
            ids = {t._cdata: self.names[name] for t, name in zip(seg, names)}
            old = plan.storage[ids[target._cdata]]
            e_args, e_kwargs = _element(func, args, kwargs, k, len(written)) if per_element else (args, kwargs)
            for t in flat.arguments(e_args, e_kwargs):
                if t._cdata not in ids:  # a tensor the trace's line leaves out (a list of another length)
                    ids[t._cdata] = self._tensor_of(t, fresh)
            recipe = Recipe.of(func, e_args, e_kwargs, ids, generator_state(func, e_args, e_kwargs), target=target)
            self._advance(c + 1, op)  # the operator; its releases follow it
            op_id = plan.args[c]
            self.recipes[op_id] = recipe
            new_s = plan.storage[plan.first_output[op_id]]
            releases = sum(1 for i in range(c + 1, end)
                           if plan.kinds[i] == RELEASE and plan.storage[plan.args[i]] == old)
            keep_old = session.kept_for_good(old) or session.external_refs(old) > releases
            instead = self._resolve_inputs(seg, ids, op)
            instead.pop(target._cdata, None)  # the write goes to the step's own storage
            st.meta.setdefault(plan.first_output[op_id], Meta.of(target))
            st.supersede(old, new_s, target.untyped_storage(), keep_old, Meta.of(target))
            if instead:
                e_args, e_kwargs = _substituted(e_args, e_kwargs, instead)
            out, ns = self._timed(func, e_args, e_kwargs)
            outs.append(out)
            elapsed += ns
            self._advance(end, op)
            line = ol.end
        if not per_element:
            return outs[0], elapsed
        return None, elapsed  # (the foreach in-place kernels return nothing)


class _NoLiveBytes:
    peak = 0

    def add(self, t) -> None:
        pass

    def sweep(self) -> None:
        pass


def _substituted(args, kwargs, instead: dict[int, torch.Tensor]):
    """``args, kwargs`` with the tensors of ``instead`` (by ``_cdata``) replaced."""
    return flat.replace((args, kwargs), lambda a: instead.get(a._cdata, a))


def _element(func, args, kwargs, k: int, n: int):
    """The arguments of element ``k`` of a call over lists of ``n``: every
    list of ``n`` items cut to its ``k``-th."""
    def cut(v):
        return [v[k]] if isinstance(v, (list, tuple)) and len(v) == n else v
    return tuple(cut(a) for a in args), {key: cut(v) for key, v in kwargs.items()}
