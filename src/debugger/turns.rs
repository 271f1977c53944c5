//! One stop shown at a time, for a backend whose program has several threads or processes
//! that stop on their own (Node's workers and children, a debug adapter's child processes): a
//! stop of another than the shown one is held, its thread left paused, until the shown one
//! goes on; then the first held stop is due. A step keeps the turn: the stepped thread's next
//! stop is the step's.

use std::collections::VecDeque;

use crate::debugger::backend::Happening;
use crate::debugger::model::Stop;

/// A backend's stop as turns see it: which thread or process it is in.
pub(crate) trait Turn {
    type Key: PartialEq + Clone;
    fn turn(&self) -> Self::Key;
}

pub(crate) struct Turns<P: Turn> {
    /// The thread whose stop is shown, while one is.
    shown: Option<P::Key>,
    /// Stops of other threads while one is shown, and what else they said meanwhile.
    held: VecDeque<Happening<P>>,
    /// The shown thread was stepped: it keeps its turn until it stops again.
    stepping: bool,
}

impl<P: Turn> Default for Turns<P> {
    fn default() -> Self {
        Turns { shown: None, held: VecDeque::new(), stepping: false }
    }
}

impl<P: Turn> Turns<P> {
    /// A happening, as the actor should see it: a stop of another thread than the shown one is
    /// held (`None`); a stop otherwise becomes the shown one.
    pub(crate) fn arrived(&mut self, happening: Happening<P>) -> Option<Happening<P>> {
        if let Happening::Stopped(stop) = &happening {
            let at = stop.paused.turn();
            match &self.shown {
                Some(shown) if *shown != at => {
                    self.held.push_back(happening);
                    return None;
                }
                _ => {
                    self.shown = Some(at);
                    self.stepping = false;
                }
            }
        }
        Some(happening)
    }

    /// Whether a held stop is due: none is shown.
    pub(crate) fn due(&self) -> bool {
        self.shown.is_none() && !self.held.is_empty()
    }

    /// The first held happening, once none is shown (a stop becomes the shown one).
    pub(crate) fn next(&mut self) -> Option<Happening<P>> {
        if self.shown.is_some() {
            return None;
        }
        let happening = self.held.pop_front()?;
        if let Happening::Stopped(stop) = &happening {
            self.shown = Some(stop.paused.turn());
        }
        Some(happening)
    }

    /// The shown stop goes on (`step`: stepped, keeping the turn).
    pub(crate) fn went_on(&mut self, step: bool) {
        self.stepping = step;
        if !step {
            self.shown = None;
        }
    }

    /// The runtime says `at` runs again: its turn ends, but for a step's. Whether `at` was the
    /// shown thread.
    pub(crate) fn resumed(&mut self, at: &P::Key) -> bool {
        let was_shown = self.shown.as_ref() == Some(at);
        if was_shown && !self.stepping {
            self.shown = None;
        }
        was_shown
    }

    /// The threads `gone` says are gone: their held stops with them, and their turn.
    pub(crate) fn forget(&mut self, gone: impl Fn(&P::Key) -> bool) {
        self.held.retain(|h| !matches!(h, Happening::Stopped(s) if gone(&s.paused.turn())));
        if self.shown.as_ref().is_some_and(&gone) {
            self.shown = None;
            self.stepping = false;
        }
    }

    /// Whether a stop of `at` waits its turn.
    pub(crate) fn holds(&self, at: &P::Key) -> bool {
        self.held.iter().any(|h| matches!(h, Happening::Stopped(s) if s.paused.turn() == *at))
    }

    /// The threads whose stops are held, in the order they came.
    pub(crate) fn held_turns(&self) -> impl Iterator<Item = P::Key> + '_ {
        self.held.iter().filter_map(|h| match h {
            Happening::Stopped(s) => Some(s.paused.turn()),
            _ => None,
        })
    }

    /// Takes `at`'s held stop, if it has one, leaving the turns as they are.
    pub(crate) fn take_held(&mut self, at: &P::Key) -> Option<Stop<P>> {
        let held = self
            .held
            .iter()
            .position(|h| matches!(h, Happening::Stopped(s) if s.paused.turn() == *at));
        match held.and_then(|index| self.held.remove(index)) {
            Some(Happening::Stopped(stop)) => Some(stop),
            _ => None,
        }
    }

    /// Holds `stop` first, and shows `at`.
    pub(crate) fn hold_first(&mut self, stop: Stop<P>, at: P::Key) {
        self.held.push_front(Happening::Stopped(stop));
        self.shown = Some(at);
    }

    /// Holds what happened while a stop was asked for (a pause of another thread).
    pub(crate) fn hold(&mut self, happening: Happening<P>) {
        self.held.push_back(happening);
    }

    pub(crate) fn shown(&self) -> Option<&P::Key> {
        self.shown.as_ref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::debugger::model::{Location, Reason};

    struct At(u8);

    impl Turn for At {
        type Key = u8;
        fn turn(&self) -> u8 {
            self.0
        }
    }

    fn stop(at: u8) -> Happening<At> {
        Happening::Stopped(Stop {
            reason: Reason::Breakpoint,
            hits: Vec::new(),
            location: Location::default(),
            exception: None,
            frames: 1,
            paused: At(at),
        })
    }

    fn at(happening: Option<Happening<At>>) -> Option<u8> {
        match happening {
            Some(Happening::Stopped(stop)) => Some(stop.paused.0),
            _ => None,
        }
    }

    #[test]
    fn another_threads_stop_waits_until_the_shown_one_goes_on() {
        let mut turns = Turns::default();
        assert_eq!(at(turns.arrived(stop(1))), Some(1));
        assert!(turns.arrived(stop(2)).is_none());
        assert!(turns.holds(&2) && !turns.due());
        turns.went_on(false);
        assert!(turns.due());
        assert_eq!(at(turns.next()), Some(2));
        assert_eq!(turns.shown(), Some(&2));
    }

    #[test]
    fn a_step_keeps_the_turn_and_a_gone_thread_gives_it_up() {
        let mut turns = Turns::default();
        turns.arrived(stop(1));
        turns.went_on(true);
        // Resumed for the step: still its turn, so another's stop waits.
        assert!(turns.resumed(&1));
        assert!(turns.arrived(stop(2)).is_none());
        assert_eq!(at(turns.arrived(stop(1))), Some(1));
        turns.forget(|t| *t == 1);
        assert_eq!(at(turns.next()), Some(2));
        turns.forget(|t| *t == 2);
        assert!(turns.shown().is_none() && !turns.due());
    }

    #[test]
    fn another_thread_shown_holds_the_one_shown_first() {
        let mut turns = Turns::default();
        turns.arrived(stop(1));
        turns.arrived(stop(2));
        let Happening::Stopped(shown) = stop(1) else { unreachable!() };
        let taken = turns.take_held(&2).map(|s| s.paused.0);
        turns.hold_first(shown, 2);
        assert_eq!((taken, turns.shown()), (Some(2), Some(&2)));
        turns.went_on(false);
        assert_eq!(at(turns.next()), Some(1));
    }
}
