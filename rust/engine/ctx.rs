//! The interpreter as the library models see it: the one implementation of `ModelCtx`.

use std::rc::Rc;

use super::interp::{Ctx, Flow, Interp, Verdict};
use super::modules;
use crate::ir::{Name, Span};
use crate::models::ctx::{ModelCtx, Msg};
use crate::rules::Rule;
use crate::shape::{Cond, Formula, Poly, Symbols, Tri};
use crate::value::*;

impl ModelCtx for Interp<'_> {
    fn syms(&self) -> &Symbols {
        &self.syms
    }

    fn fresh_sym(&mut self, name: &str, lo: i128) -> Poly {
        self.syms.fresh(name, lo)
    }

    fn fresh_int_sym(&mut self, name: &str, lo: i128) -> Poly {
        self.syms.fresh_int(name, lo)
    }

    fn fresh_every_sym(&mut self, name: &str, lo: i128) -> Poly {
        self.syms.fresh_every(name, lo)
    }

    fn flag(&mut self, name: &str, phrase: (&'static str, &'static str)) -> Cond {
        self.syms.flag(name, phrase)
    }

    fn entry_sites(&self, t: &Rc<Tensor>, at: Option<Span>) -> Vec<Span> {
        // the outermost call of the checked file that handed it on unchanged (in a shared
        // run, of each project file)
        let n = self.calls.len().min(self.arg_tensors.len());
        let off = self.calls.len() - n;
        let shared = self.shared_run.is_some();
        let mut out: Vec<Span> = Vec::new();
        for i in 0..n {
            let call = self.calls[off + i];
            let reports = if shared { call.file.0 >= crate::engine::project::FIRST_FILE } else { call.file == crate::ir::FileId::MAIN };
            if reports && !out.iter().any(|s| s.file == call.file) && self.arg_tensors[i].iter().any(|a| Rc::ptr_eq(a, t)) {
                out.push(call);
                // (a site on the stack: the summaries of the calls under it key the stack)
                self.context_read.set(self.context_read.get().min(off + i));
            }
        }
        if let Some(at) = at {
            let own = if shared { self.user_span(at).file } else { crate::ir::FileId::MAIN };
            if !out.iter().any(|s| s.file == own) {
                out.push(at);
            }
        }
        out
    }

    fn fresh_shape_var(&mut self) -> u32 {
        Interp::fresh_shape_var(self)
    }

    fn derived_var(&mut self, key: &[u32]) -> u32 {
        // (the key's variables, and its tag and lengths with them: pinning more only matches less)
        for &x in key.iter().skip(1) {
            crate::value::reads::note_pinned_var(x);
        }
        if let Some(v) = self.refined_vars.get(key) {
            return *v;
        }
        let v = Interp::fresh_shape_var(self);
        self.add_refined(crate::engine::memo::Refined::Var(key.to_vec(), v));
        v
    }

    fn fixed_by(&mut self, var: u32, index: usize, span: Span) {
        if self.summary.is_some() && !self.fixed_at.iter().any(|(v, i, _)| *v == var && *i == index) {
            let span = self.user_span(span);
            self.fixed_at.push((var, index, span));
        }
    }

    fn refine_dim(&mut self, parent: u32, slot: usize, name: &str) -> Dim {
        crate::value::reads::note_pinned_var(parent);
        let key = (parent, slot, Rc::from(name));
        if let Some(p) = self.refined_dims.get(&key) {
            return Dim::known(p.clone(), None);
        }
        let p = self.syms.fresh(name, 1);
        self.syms.set_param(&p, crate::shape::Param { name: name.to_string(), kind: crate::shape::ParamKind::Input, default: None });
        self.add_refined(crate::engine::memo::Refined::Dim(key, p.clone()));
        Dim::known(p, None)
    }

    fn line(&self, span: Span) -> usize {
        Interp::line(self, span)
    }

    fn cite(&self, d: &Dim, primary: bool) {
        // (a size shown on its own counts without an origin: the shapes then stand for nothing)
        if (primary || d.why.is_some())
            && let Some(c) = self.cited.borrow_mut().as_mut()
        {
            c.push((d.clone(), primary));
        }
    }

    fn place(&self, span: Span) -> String {
        Interp::place(self, span)
    }

    fn label(&mut self) -> Option<Rc<str>> {
        Interp::label(self)
    }

    fn may_fail(&self) -> bool {
        self.settings.may_fail
    }

    fn free_params(&self) -> bool {
        self.settings.free_params
    }

    fn switches(&self) -> bool {
        self.settings.switches
    }

    fn param_value(&self, name: &str) -> Option<i128> {
        self.settings.param_value(name)
    }

    fn set_param(&mut self, p: &Poly, param: crate::shape::Param) {
        self.syms.set_param(p, param)
    }

    fn assume_formula(&mut self, st: &mut State, f: Formula) {
        Rc::make_mut(&mut st.assumed.borrow_mut()).push(f);
    }

    fn check_with(&mut self, st: &State, site: Span, violated: Formula, rule: &'static Rule, msg: Msg) -> bool {
        Interp::check(self, st, site, violated, rule, |i| msg(i))
    }

    fn suggest_fix(&mut self, hint: crate::value::FixHint) {
        self.fix_hint = Some(hint);
    }

    fn extend_sys_path(&mut self, dir: &str) {
        let Some(p) = self.project.paths.as_mut() else { return };
        let Some(base) = p.dirs.first().cloned() else { return };
        if let Ok(d) = std::fs::canonicalize(base.join(dir))
            && d.is_dir()
            && !p.dirs.contains(&d)
        {
            p.dirs.push(d);
        }
    }

    fn checkpoints(&mut self) -> &mut crate::rules::training::checkpoint_key_never_saved::Log {
        &mut self.checkpoints
    }

    fn passes(&mut self, st: &State, site: Span) {
        self.record(st, site, Verdict::Holds)
    }

    fn warn(&mut self, st: &State, site: Span, rule: &'static Rule, message: String) {
        Interp::warn(self, st, site, rule, message)
    }

    fn emit(&mut self, event: &crate::rules::events::Event, st: &State, span: Span) {
        Interp::emit(self, event, st, span)
    }

    fn assume(&mut self, st: &State, site: Span, n: usize) -> Vec<State> {
        (0..n)
            .map(|k| {
                let mut alt = st.clone();
                if n > 1 {
                    alt.branches.push(Branch::Assume(site, k as u32, n as u32));
                    alt.tainted = true;
                }
                alt
            })
            .collect()
    }

    fn branch(&mut self, st: &mut State, cond: Cond) -> bool {
        if !st.facts.assume(&self.syms, &cond) {
            return false;
        }
        st.branches.push(Branch::Sym(cond));
        true
    }

    fn call(&mut self, f: Value, args: Vec<Value>, kwargs: Vec<(Name, Value)>, st: State, span: Span) -> Vals {
        Interp::call(self, f, args, kwargs, st, span)
    }

    fn bound_vals(&mut self, vals: Vals, span: Span) -> Vals {
        Interp::bound_vals(self, vals, span)
    }

    fn call_closure(&mut self, c: &Rc<Closure>, args: Vec<Value>, kwargs: Vec<(Name, Value)>, st: State, span: Span) -> Vals {
        Interp::call_closure(self, c, args, kwargs, st, span)
    }

    fn call_sample(&mut self, getitem: &Rc<Closure>, ds: Value, st: State, span: Span) -> Vals {
        Interp::call_sample(self, getitem, ds, st, span)
    }

    fn iterate(&mut self, st: &mut State, it: &Value, span: Span) -> Option<Vec<Value>> {
        Interp::iterate(self, st, it, span)
    }

    fn first_yield(&mut self, st: &mut State, g: &Value, span: Span) -> Option<Value> {
        Interp::first_yield(self, st, g, span)
    }

    fn get_attr(&mut self, st: State, o: Value, name: &Name, span: Span) -> Vals {
        Interp::get_attr(self, st, o, name, span)
    }

    fn set_attr(&mut self, st: &mut State, o: &Value, name: &Name, v: Value) {
        Interp::set_attr(self, st, o, name, v)
    }

    fn truthiness(&self, st: &State, v: &Value) -> Tri {
        Interp::truthiness(self, st, v)
    }

    fn class_lookup(&self, st: &State, class: ObjId, name: &str) -> Option<(ObjId, Value)> {
        Interp::class_lookup(self, st, class, name)
    }

    fn lib_base(&self, st: &State, class: ObjId) -> Option<Rc<str>> {
        Interp::lib_base(self, st, class)
    }

    fn has_unknown_base(&self, st: &State, class: ObjId) -> bool {
        Interp::has_unknown_base(self, st, class)
    }

    fn layer_base(&self, st: &State, class: ObjId) -> Option<&'static str> {
        Interp::layer_base(self, st, class)
    }

    fn call_embedded(&mut self, st: State, module: &str, name: &str, args: Vec<Value>, kwargs: Vec<(Name, Value)>, span: Span) -> Vals {
        let Some(m) = modules::embedded(module) else { return vec![(st, Value::Unknown)] };
        let mut st = st;
        let scope = st.alloc(Obj::Scope { vars: Default::default(), parent: None });
        let ctx = Ctx { scope, module_scope: scope, class_body: None, method_class: None, self_val: None, globals: Rc::new(Vec::new()) };
        let mut defined = self.block(&m.body, st, &ctx);
        if defined.len() != 1 || defined[0].1 != Flow::Normal {
            // the definitions always run straight through; anything else (a budget ran out) is Unknown
            return defined.into_iter().take(1).map(|(s, _)| (s, Value::Unknown)).collect();
        }
        let (st, _) = defined.remove(0);
        let Some(f) = self.lookup(&st, &ctx, name) else { return vec![(st, Value::Unknown)] };
        self.call(f, args, kwargs, st, span)
    }
}
