//! Watchpoints on the JVM: JDWP watches fields (of one object, or a static one), never a
//! local or an array's element. A read stops at the access; a write is reported once done
//! (the modification event comes before the write: the thread steps one bytecode first), so
//! the stop reads the new value. The watched object is kept from being collected while
//! watched; what the session reads at each stop names it by its id (`@id.field`).

use super::Java;
use crate::debugger::{Code, Failure};
use crate::jdwp::wire::Id;
use crate::jdwp::{kind, suspend};

/// A watchpoint's request in one JVM.
pub(super) struct Watch {
    pub(super) id: String,
    kind: u8,
    object: Id,
}

impl Java {
    /// Watchpoint `id` on `field` of `object` (0: a static field of `class`) in JVM `m`,
    /// for events of `kinds`; what reads the field's value wherever the program stops next.
    pub(super) fn watch_field(
        &mut self,
        m: usize,
        id: &str,
        (object, class, field): (Id, Id, Id),
        kinds: &[u8],
    ) -> Result<String, Failure> {
        let machine = &mut self.machines[m];
        let vm = &machine.jvm.vm;
        let mut modifiers = vec![vm.out().u8(9).class(class).field(field).bytes];
        if object != 0 {
            modifiers.push(vm.out().u8(11).object(object).bytes);
        }
        for &kind in kinds {
            let request = machine.jvm.vm.set_event(kind, suspend::ALL, &modifiers);
            let request = request.map_err(|e| {
                Failure::new(Code::Unsupported, format!("the JVM refused the watchpoint: {e}"))
            })?;
            machine.watches.insert(request, Watch { id: id.to_string(), kind, object });
        }
        let name = (machine.jvm.vm.fields(class).into_iter())
            .find(|f| f.id == field)
            .map(|f| f.name)
            .unwrap_or_default();
        Ok(match object {
            0 => format!("@@{class}.{name}"),
            _ => {
                machine.jvm.vm.keep(object, true);
                format!("@{object}.{name}")
            }
        })
    }

    /// Watchpoint `id` no more, in every JVM.
    pub(super) fn unwatch(&mut self, id: &str) {
        for machine in &mut self.machines {
            let requests: Vec<i32> =
                machine.watches.iter().filter(|(_, w)| w.id == id).map(|(r, _)| *r).collect();
            for request in requests {
                let Some(watch) = machine.watches.remove(&request) else { continue };
                machine.jvm.vm.clear_event(watch.kind, request);
                if watch.object != 0 && !machine.watches.values().any(|w| w.object == watch.object)
                {
                    machine.jvm.vm.keep(watch.object, false);
                }
            }
        }
    }

    /// A watched field of JVM `m` was read (a stop now), or is about to be written: the
    /// thread steps over the write first and stops after it (`true`: a stop now).
    pub(super) fn field_event(&mut self, m: usize, thread: Id, modified: bool) -> bool {
        if !modified {
            return true;
        }
        let machine = &mut self.machines[m];
        let vm = &machine.jvm.vm;
        // One bytecode, over calls: past the `putfield`.
        let only = vm.out().u8(10).object(thread).i32(0).i32(1).bytes;
        match vm.set_event(kind::SINGLE_STEP, suspend::ALL, &[only]) {
            Ok(request) => {
                machine.written = Some(request);
                false
            }
            // A step of the agent's pending in the thread: stop before the write.
            Err(_) => true,
        }
    }
}
