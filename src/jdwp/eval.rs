//! Java expressions evaluated in a stopped frame, over JDWP alone (no compiler, no helper in
//! the program): locals, `this`, fields, statics, array elements and `length`, method calls
//! run in the stopped thread (the others held, with a time limit), arithmetic, comparison,
//! logic, string concatenation, casts, `instanceof`, `?:` and literals, with Java's rules
//! (numeric promotion, integer division, `==` on references by identity).

use super::expr::{dotted, parse, Expr, PRIMITIVES, V};
use super::values::{find_method, Show, Values};
use super::vm::{self, Invoked, Vm};
use super::wire::{tag, Id, Location, Value};

/// Where an expression is evaluated: a frame of a suspended thread (`depth` frames below
/// its top).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Frame {
    pub(crate) thread: Id,
    pub(crate) frame: Id,
    pub(crate) depth: usize,
    pub(crate) at: Location,
}

impl Frame {
    /// The frame's id again: a method run in the thread ends every id of its frames.
    pub(crate) fn refresh(&mut self, vm: &Vm) {
        if let Ok(frames) = vm.frames(self.thread, self.depth, 1) {
            if let Some(&(id, _)) = frames.first() {
                self.frame = id;
            }
        }
    }
}

type Failed = String;

struct Eval<'a> {
    vm: &'a mut Vm,
    values: &'a mut Values,
    frame: Frame,
}

/// `{type, value}` of `text` in a frame, within `budget` characters; a compile error or an
/// exception is `{type: "error", value}`.
pub(crate) fn evaluate(
    vm: &mut Vm,
    values: &mut Values,
    frame: Frame,
    text: &str,
    budget: usize,
) -> serde_json::Value {
    let result = parse(text).and_then(|expr| {
        let mut eval = Eval { vm: &mut *vm, values: &mut *values, frame };
        eval.value(&expr)
    });
    match result {
        Ok(V::Vm(value)) => {
            let mut show = Show { vm, values, thread: frame.thread, budget, truncated: false };
            show.typed(&value)
        }
        Ok(V::Str(text)) => {
            let mut answer = serde_json::json!({"type": "String", "value": crate::debugger::limits::clip(&text, budget)});
            if text.chars().count() > budget {
                answer["truncated"] = true.into();
            }
            answer
        }
        Ok(V::Class(class)) => {
            serde_json::json!({"type": "Class", "value": vm::class_name(&vm.signature(class))})
        }
        Err(message) => serde_json::json!({"type": "error", "value": message}),
    }
}

/// The VM's own value of `text` in a frame (a String made here is made in the VM), to set a
/// variable to.
pub(crate) fn value(
    vm: &mut Vm,
    values: &mut Values,
    frame: Frame,
    text: &str,
) -> Result<Value, String> {
    let expr = parse(text)?;
    let mut eval = Eval { vm: &mut *vm, values: &mut *values, frame };
    match eval.value(&expr)? {
        V::Vm(value) => Ok(value),
        V::Str(text) => vm.create_string(&text).map_err(|e| e.to_string()),
        V::Class(_) => Err("a class is not a value".into()),
    }
}

/// What the left side of an assignment names: a local, a field (a static one when `object`
/// is 0; `fixed`: final) or an array's element.
enum Place {
    Local { slot: i32 },
    Field { object: Id, class: Id, field: Id, fixed: bool },
    Element { array: Id, index: usize },
}

/// The field `target` names in a frame, to watch: `(object, class, field)`, `object` 0 for
/// a static field.
pub(crate) fn field_named(
    vm: &mut Vm,
    values: &mut Values,
    frame: Frame,
    target: &str,
) -> Result<(Id, Id, Id), Failed> {
    let expr = parse(target)?;
    let mut eval = Eval { vm, values, frame };
    match eval.place(&expr)?.0 {
        Place::Field { object, class, field, .. } => Ok((object, class, field)),
        Place::Local { .. } => Err(format!("`{target}` is a local: the JVM watches fields only (a local changes only in its own method, where a breakpoint with a condition finds the change)")),
        Place::Element { .. } => Err(format!("`{target}` is an array's element: the JVM watches fields only (watch the field holding the array, or set a breakpoint with a condition)")),
    }
}

/// Sets what `target` names in a frame (a local; a field of `this`, of an object or of a
/// class; an array's element) to the value of `text`, converted to its type as a cast would.
pub(crate) fn assign(
    vm: &mut Vm,
    values: &mut Values,
    frame: Frame,
    target: &str,
    text: &str,
) -> Result<(), Failed> {
    let target = parse(target)?;
    let mut eval = Eval { vm: &mut *vm, values: &mut *values, frame };
    let (place, signature) = eval.place(&target)?;
    if let (Place::Field { fixed: true, .. }, Expr::Field(_, name) | Expr::Name(name)) =
        (&place, &target)
    {
        return Err(format!("cannot assign a value to final variable {name}"));
    }
    let cast = match vm::tag_of(&signature) {
        b'L' | b's' | b'[' | b't' => text.to_string(),
        _ => format!("({}) ({text})", vm::class_name(&signature)),
    };
    let new = value(vm, values, frame, &cast)?;
    let wrote = match place {
        Place::Local { slot } => {
            // A method run for the value ended the frame's id: read again.
            let mut frame = frame;
            frame.refresh(vm);
            vm.set_frame_value(frame.thread, frame.frame, slot, &new)
        }
        Place::Field { object, class, field, .. } => vm.set_field(object, class, field, &new),
        Place::Element { array, index } => vm.set_element(array, index, &new),
    };
    wrote.map_err(|e| format!("cannot set it: {e}"))
}

/// The locals of a frame live at its location: `(name, value)` in slot order; `None` when
/// the class was compiled without them.
pub(crate) fn locals(vm: &mut Vm, frame: Frame) -> Option<Vec<(String, Value)>> {
    let variables = vm.variables(frame.at.class, frame.at.method)?;
    let mut live: Vec<&vm::Variable> =
        variables.iter().filter(|v| v.live_at(frame.at.index)).collect();
    live.sort_by_key(|v| v.slot);
    let slots: Vec<(i32, u8)> = live.iter().map(|v| (v.slot, vm::tag_of(&v.signature))).collect();
    let values = vm.frame_values(frame.thread, frame.frame, &slots).ok()?;
    Some(live.iter().map(|v| v.name.clone()).zip(values).collect())
}

impl Eval<'_> {
    fn value(&mut self, expr: &Expr) -> Result<V, Failed> {
        match expr {
            Expr::Literal(v) => Ok(v.clone()),
            Expr::This => match self.this()? {
                Value::Object(_, 0) => Err("`this` in a static method".into()),
                this => Ok(V::Vm(this)),
            },
            Expr::Name(name) => self.name(name),
            Expr::Field(base, name) => match self.value(base) {
                Ok(base) => self.field(base, name),
                // `java.util.List`, `app.Orders.TAX`: a class named by its package.
                Err(e) => match dotted(base) {
                    Some(prefix) => match self.class(&format!("{prefix}.{name}")) {
                        Some(class) => Ok(V::Class(class)),
                        None => Err(e),
                    },
                    None => Err(e),
                },
            },
            Expr::Index(base, index) => {
                let (array, index) = self.element(base, index)?;
                let values = self.vm.array_values(array, index, 1);
                let value = values.map_err(|e| e.to_string())?.into_iter().next();
                Ok(V::Vm(value.unwrap_or(Value::Void)))
            }
            Expr::Call(receiver, name, arguments) => {
                self.call(receiver.as_deref(), name, arguments)
            }
            Expr::Unary(op, operand) => {
                let operand = self.value(operand)?;
                self.unary(op, operand)
            }
            Expr::Binary(op @ ("&&" | "||"), left, right) => {
                let left = self.value(left)?;
                // `a && b` is `a` when `a` is false; `a || b` when it is true.
                let decided = self.boolean(left)?;
                if decided == (*op == "||") {
                    return Ok(V::Vm(Value::Boolean(decided)));
                }
                let right = self.value(right)?;
                Ok(V::Vm(Value::Boolean(self.boolean(right)?)))
            }
            Expr::Binary(op, left, right) => {
                let (left, right) = (self.value(left)?, self.value(right)?);
                self.binary(op, left, right)
            }
            Expr::Conditional(condition, then, otherwise) => {
                let condition = self.value(condition)?;
                match self.boolean(condition)? {
                    true => self.value(then),
                    false => self.value(otherwise),
                }
            }
            Expr::Cast(to, operand) => {
                let operand = self.value(operand)?;
                self.cast(to, operand)
            }
            Expr::InstanceOf(operand, type_name) => {
                let operand = self.value(operand)?;
                let Value::Object(_, id) = self.object(&operand)? else {
                    return Err("instanceof needs an object".into());
                };
                if id == 0 {
                    return Ok(V::Vm(Value::Boolean(false)));
                }
                let target = self
                    .class(type_name)
                    .ok_or_else(|| format!("cannot find symbol: class {type_name}"))?;
                let class = self.vm.type_of(id).map_err(|e| e.to_string())?;
                let signature = self.vm.signature(target);
                Ok(V::Vm(Value::Boolean(self.vm.is_a(class, &signature))))
            }
        }
    }

    /// Where an assignment to `target` writes, and the type it holds (a JNI signature).
    fn place(&mut self, target: &Expr) -> Result<(Place, String), Failed> {
        match target {
            Expr::Name(name) => {
                let at = self.frame.at;
                let variables = self.vm.variables(at.class, at.method).unwrap_or_default();
                if let Some(v) = variables.iter().find(|v| v.name == *name && v.live_at(at.index)) {
                    return Ok((Place::Local { slot: v.slot }, v.signature.clone()));
                }
                // A field of `this`, or a static of this class.
                let base = match self.this()? {
                    this @ Value::Object(_, id) if id != 0 => V::Vm(this),
                    _ => V::Class(at.class),
                };
                self.field_place(base, name)
            }
            Expr::Field(base, name) => {
                let base = match self.value(base) {
                    Ok(base) => base,
                    Err(e) => V::Class(dotted(base).and_then(|n| self.class(&n)).ok_or(e)?),
                };
                self.field_place(base, name)
            }
            Expr::Index(base, index) => {
                let (array, index) = self.element(base, index)?;
                let class = self.vm.type_of(array).map_err(|e| e.to_string())?;
                let component = self.vm.signature(class)[1..].to_string();
                Ok((Place::Element { array, index }, component))
            }
            _ => Err("only a variable, a field or an array's element can be set".into()),
        }
    }

    /// The array `base` is and the element `index` names in it, within its length.
    fn element(&mut self, base: &Expr, index: &Expr) -> Result<(Id, usize), Failed> {
        let base = self.value(base)?;
        let index = self.value(index)?;
        let index = self.integer(index)?;
        let Value::Object(tag::ARRAY, array) = self.object(&base)? else {
            return Err("an index of something that is not an array".into());
        };
        let length = self.vm.array_length(array).map_err(|e| e.to_string())?;
        if index < 0 || index as usize >= length {
            return Err(format!(
                "java.lang.ArrayIndexOutOfBoundsException: Index {index} out of bounds for length {length}"
            ));
        }
        Ok((array, index as usize))
    }

    /// Field `name` of an object or a class, as a place to write.
    fn field_place(&mut self, base: V, name: &str) -> Result<(Place, String), Failed> {
        let (object, class) = match base {
            V::Class(class) => (0, class),
            V::Vm(Value::Object(_, 0)) => {
                return Err(format!("java.lang.NullPointerException: cannot assign field \"{name}\" because the value is null"))
            }
            V::Vm(Value::Object(_, id)) => (id, self.vm.type_of(id).map_err(|e| e.to_string())?),
            _ => return Err(format!("cannot find symbol: {name} (not an object)")),
        };
        let Some((declaring, field)) = self.vm.find_field(class, name) else {
            return Err(format!("cannot find symbol: {name}"));
        };
        let object = match (field.is_static(), object) {
            (true, _) => 0,
            (false, 0) => {
                return Err(format!(
                    "non-static variable {name} cannot be referenced from a static context"
                ))
            }
            (false, object) => object,
        };
        let fixed = field.modifiers & 0x0010 != 0;
        let place = Place::Field { object, class: declaring, field: field.id, fixed };
        Ok((place, field.signature))
    }

    fn this(&mut self) -> Result<Value, Failed> {
        self.vm.this_object(self.frame.thread, self.frame.frame).map_err(|e| e.to_string())
    }

    fn name(&mut self, name: &str) -> Result<V, Failed> {
        let variables = self.vm.variables(self.frame.at.class, self.frame.at.method);
        if let Some(variable) =
            variables.iter().flatten().find(|v| v.name == name && v.live_at(self.frame.at.index))
        {
            let slot = [(variable.slot, vm::tag_of(&variable.signature))];
            let values = self.vm.frame_values(self.frame.thread, self.frame.frame, &slot);
            let value = values.map_err(|e| e.to_string())?.into_iter().next();
            return Ok(V::Vm(value.unwrap_or(Value::Void)));
        }
        // A field of `this`, or a static of this class or an enclosing one.
        let this = self.this()?;
        if let Value::Object(_, id) = this {
            if id != 0 {
                if let Ok(found) = self.field(V::Vm(this), name) {
                    return Ok(found);
                }
            }
        }
        if let Ok(found) = self.field(V::Class(self.frame.at.class), name) {
            return Ok(found);
        }
        if let Some(class) = self.class(name) {
            return Ok(V::Class(class));
        }
        let hint = match variables {
            None => " (this class was compiled without local variable names: compile with `javac -g` to read locals)",
            Some(_) => "",
        };
        Err(format!("cannot find symbol: {name}{hint}"))
    }

    /// A class by the name the program would write: qualified, or in this class's package,
    /// nested in it, or in `java.lang`.
    fn class(&mut self, name: &str) -> Option<Id> {
        let here = self.vm.signature(self.frame.at.class);
        let here = here.trim_start_matches('L').trim_end_matches(';').to_string();
        let package = here.rsplit_once('/').map_or("", |(p, _)| p);
        let slashed = name.replace('.', "/");
        let mut tries = vec![slashed.clone(), format!("{here}${}", slashed.replace('/', "$"))];
        if !package.is_empty() {
            tries.push(format!("{package}/{slashed}"));
        }
        tries.push(format!("java/lang/{slashed}"));
        tries.push(format!("java/util/{slashed}"));
        // `Outer.Inner` written with dots.
        if let Some((outer, inner)) = slashed.rsplit_once('/') {
            tries.push(format!("{outer}${inner}"));
            if !package.is_empty() {
                tries.push(format!("{package}/{outer}${inner}"));
            }
        }
        tries.into_iter().find_map(|t| {
            let classes = self.vm.classes_by_signature(&format!("L{t};")).ok()?;
            classes.first().copied()
        })
    }

    fn field(&mut self, base: V, name: &str) -> Result<V, Failed> {
        match base {
            V::Class(class) => {
                let found = self.static_field(class, name)?;
                match found {
                    Some(value) => Ok(V::Vm(value)),
                    None => {
                        let nested = format!("{}.{name}", vm::class_name(&self.vm.signature(class)));
                        match self.class(&nested) {
                            Some(inner) => Ok(V::Class(inner)),
                            None => Err(format!("cannot find symbol: {name}")),
                        }
                    }
                }
            }
            V::Str(text) if name == "length" => Err(format!("`length` of a String: write \"{}\".length()", crate::debugger::limits::clip(&text, 20))),
            V::Str(_) => Err(format!("cannot find symbol: {name}")),
            V::Vm(Value::Object(tag::ARRAY, array)) if name == "length" && array != 0 => {
                let length = self.vm.array_length(array).map_err(|e| e.to_string())?;
                Ok(V::Vm(Value::Int(length as i32)))
            }
            V::Vm(Value::Object(_, 0)) => {
                Err(format!("java.lang.NullPointerException: cannot read field \"{name}\" because the value is null"))
            }
            V::Vm(Value::Object(_, id)) => {
                let class = self.vm.type_of(id).map_err(|e| e.to_string())?;
                match self.vm.find_field(class, name) {
                    Some((_, field)) if field.is_static() => {
                        Ok(V::Vm(self.static_field(class, name)?.unwrap_or(Value::Void)))
                    }
                    Some((_, field)) => {
                        let values = self.vm.object_values(id, &[field.id]);
                        let value = values.map_err(|e| e.to_string())?.into_iter().next();
                        Ok(V::Vm(value.unwrap_or(Value::Void)))
                    }
                    None => Err(format!(
                        "cannot find symbol: {name} in {}",
                        vm::short_name(&self.vm.signature(class))
                    )),
                }
            }
            V::Vm(_) => Err(format!("a primitive has no field `{name}`")),
        }
    }

    /// A static field of the class, a superclass or (for a nested class) its outer classes.
    fn static_field(&mut self, class: Id, name: &str) -> Result<Option<Value>, Failed> {
        let mut at = Some(class);
        while let Some(class) = at {
            if let Some((declaring, field)) = self.vm.find_field(class, name) {
                if field.is_static() {
                    let values = self.vm.static_values(declaring, &[field.id]);
                    return Ok(values.map_err(|e| e.to_string())?.into_iter().next());
                }
            }
            // The enclosing class: `Outer$Inner` → `Outer`.
            let signature = self.vm.signature(class);
            at = signature.rsplit_once('$').and_then(|(outer, _)| {
                self.vm.classes_by_signature(&format!("{outer};")).ok()?.first().copied()
            });
        }
        Ok(None)
    }

    fn call(
        &mut self,
        receiver: Option<&Expr>,
        name: &str,
        arguments: &[Expr],
    ) -> Result<V, Failed> {
        let receiver = match receiver {
            Some(expr) => match self.value(expr) {
                Ok(v) => v,
                Err(e) => match dotted(expr).and_then(|n| self.class(&n)) {
                    Some(class) => V::Class(class),
                    None => return Err(e),
                },
            },
            None => match self.this()? {
                Value::Object(_, 0) => V::Class(self.frame.at.class),
                this => V::Vm(this),
            },
        };
        if self.values.no_calls {
            return Err(format!(
                "{name}() is not run in a run that traces `calls` (a traced method would stop in \
                 itself): read fields instead, or probe in a run of its own"
            ));
        }
        let mut values = Vec::with_capacity(arguments.len());
        for argument in arguments {
            values.push(self.value(argument)?);
        }
        let (object, class) = match &receiver {
            V::Class(class) => (0, *class),
            V::Str(text) => {
                let made = self.vm.create_string(text).map_err(|e| e.to_string())?;
                let Value::Object(_, id) = made else { unreachable!("a string is an object") };
                (id, self.vm.type_of(id).map_err(|e| e.to_string())?)
            }
            V::Vm(Value::Object(_, 0)) => {
                return Err(format!("java.lang.NullPointerException: cannot invoke \"{name}()\" because the value is null"))
            }
            V::Vm(Value::Object(_, id)) => (*id, self.vm.type_of(*id).map_err(|e| e.to_string())?),
            V::Vm(_) => return Err(format!("a primitive has no method `{name}`")),
        };
        let (_, method) = find_method(self.vm, class, name, values.len()).ok_or_else(|| {
            format!(
                "cannot find symbol: method {name} of {} argument(s) in {}",
                values.len(),
                vm::short_name(&self.vm.signature(class))
            )
        })?;
        if object == 0 && !method.is_static() {
            return Err(format!("non-static method {name} cannot be called on a class"));
        }
        let parameters: Vec<String> =
            vm::argument_types(&method.signature).into_iter().map(String::from).collect();
        let mut passed = Vec::with_capacity(values.len());
        for (value, parameter) in values.into_iter().zip(&parameters) {
            passed.push(self.argument(value, parameter)?);
        }
        let invoked = self.vm.invoke(self.frame.thread, object, class, method.id, &passed);
        self.frame.refresh(self.vm);
        match invoked.map_err(|e| match e {
            super::Error::NoReply => format!(
                "{name}() did not return within {} s (the program's other threads are held while it runs)",
                vm::INVOKE_WAIT.as_secs()
            ),
            e => e.to_string(),
        })? {
            Invoked::Returned(value) => Ok(V::Vm(value)),
            Invoked::Threw(exception) => {
                let mut show = Show { vm: self.vm, values: self.values, thread: 0, budget: 500, truncated: false };
                let shown = show.json(&exception, 0);
                Err(shown.as_str().map(String::from).unwrap_or_else(|| shown.to_string()))
            }
        }
    }

    /// A value passed for a parameter of JNI type `parameter`: widened, boxed or made a
    /// String in the VM as Java would.
    fn argument(&mut self, value: V, parameter: &str) -> Result<Value, Failed> {
        let value = match value {
            V::Str(text) => return self.vm.create_string(&text).map_err(|e| e.to_string()),
            V::Class(_) => return Err("a class is not a value".into()),
            V::Vm(value) => value,
        };
        if parameter.starts_with(['L', '[']) {
            return match value {
                Value::Object(..) => Ok(value),
                primitive => self.boxed(primitive),
            };
        }
        let cast = self.cast(&vm::class_name(parameter), V::Vm(value))?;
        match cast {
            V::Vm(value) => Ok(value),
            _ => Err("an argument of the wrong type".into()),
        }
    }

    /// A primitive boxed (`Integer.valueOf`), for a parameter of type Object.
    fn boxed(&mut self, value: Value) -> Result<Value, Failed> {
        let (class, signature) = match value {
            Value::Int(_) => ("Integer", "(I)Ljava/lang/Integer;"),
            Value::Long(_) => ("Long", "(J)Ljava/lang/Long;"),
            Value::Double(_) => ("Double", "(D)Ljava/lang/Double;"),
            Value::Float(_) => ("Float", "(F)Ljava/lang/Float;"),
            Value::Boolean(_) => ("Boolean", "(Z)Ljava/lang/Boolean;"),
            Value::Char(_) => ("Character", "(C)Ljava/lang/Character;"),
            Value::Short(_) => ("Short", "(S)Ljava/lang/Short;"),
            Value::Byte(_) => ("Byte", "(B)Ljava/lang/Byte;"),
            other => return Ok(other),
        };
        let found = self.vm.classes_by_signature(&format!("Ljava/lang/{class};"));
        let class_id = found.ok().and_then(|c| c.first().copied()).ok_or("no boxing class")?;
        let method = self
            .vm
            .methods(class_id)
            .into_iter()
            .find(|m| m.name == "valueOf" && m.signature == signature);
        let method = method.ok_or("no valueOf")?;
        let invoked = self.vm.invoke(self.frame.thread, 0, class_id, method.id, &[value]);
        self.frame.refresh(self.vm);
        match invoked {
            Ok(Invoked::Returned(boxed)) => Ok(boxed),
            _ => Err(format!("cannot box a {class}")),
        }
    }

    /// The VM object of a value (a string made here is made in the VM).
    fn object(&mut self, value: &V) -> Result<Value, Failed> {
        match value {
            V::Vm(value @ Value::Object(..)) => Ok(value.clone()),
            V::Str(text) => self.vm.create_string(text).map_err(|e| e.to_string()),
            _ => Err("not an object".into()),
        }
    }

    /// A primitive, unboxed when boxed.
    fn primitive(&mut self, value: V) -> Result<Value, Failed> {
        match value {
            V::Vm(Value::Object(_, 0)) => {
                Err("java.lang.NullPointerException: a null where a number was needed".into())
            }
            V::Vm(Value::Object(t, id)) if t == tag::OBJECT => {
                match self.vm.field_value(id, "value") {
                    Some(
                        inner @ (Value::Int(_)
                        | Value::Long(_)
                        | Value::Double(_)
                        | Value::Float(_)
                        | Value::Short(_)
                        | Value::Byte(_)
                        | Value::Char(_)
                        | Value::Boolean(_)),
                    ) => Ok(inner),
                    _ => Err("an object where a primitive was needed".into()),
                }
            }
            V::Vm(value @ Value::Object(..)) => {
                Err(format!("a {} where a primitive was needed", tag_name(value.tag())))
            }
            V::Vm(value) => Ok(value),
            V::Str(_) => Err("a String where a primitive was needed".into()),
            V::Class(_) => Err("a class is not a value".into()),
        }
    }

    fn boolean(&mut self, value: V) -> Result<bool, Failed> {
        match self.primitive(value)? {
            Value::Boolean(b) => Ok(b),
            _ => Err("incompatible types: a boolean was needed".into()),
        }
    }

    fn integer(&mut self, value: V) -> Result<i64, Failed> {
        match numeric(&self.primitive(value)?) {
            Some(Num::Int(n, _)) => Ok(n),
            _ => Err("incompatible types: an integer was needed".into()),
        }
    }

    fn unary(&mut self, op: &str, operand: V) -> Result<V, Failed> {
        let value = self.primitive(operand)?;
        Ok(V::Vm(match (op, value) {
            ("!", Value::Boolean(b)) => Value::Boolean(!b),
            ("!", _) => return Err("bad operand type for !".into()),
            (op, value) => match (op, numeric(&value).ok_or("bad operand type")?) {
                ("-", Num::Int(n, long)) => int(n.wrapping_neg(), long),
                ("-", Num::Float(f, double)) => float(-f, double),
                ("~", Num::Int(n, long)) => int(!n, long),
                ("+", Num::Int(n, long)) => int(n, long),
                ("+", Num::Float(f, double)) => float(f, double),
                _ => return Err(format!("bad operand type for {op}")),
            },
        }))
    }

    fn binary(&mut self, op: &str, left: V, right: V) -> Result<V, Failed> {
        let stringy = |v: &V| matches!(v, V::Str(_) | V::Vm(Value::Object(tag::STRING, _)));
        if op == "+" && (stringy(&left) || stringy(&right)) {
            let text = format!("{}{}", self.text(left)?, self.text(right)?);
            return Ok(V::Str(text));
        }
        if op == "==" || op == "!=" {
            if let (Some(a), Some(b)) = (reference(&left), reference(&right)) {
                return Ok(V::Vm(Value::Boolean((a == b) == (op == "=="))));
            }
        }
        let (a, b) = (self.primitive(left)?, self.primitive(right)?);
        if let (Value::Boolean(a), Value::Boolean(b)) = (&a, &b) {
            let result = match op {
                "==" => a == b,
                "!=" => a != b,
                "&" => *a & *b,
                "|" => *a | *b,
                "^" => *a ^ *b,
                _ => return Err(format!("bad operand types for {op}: boolean")),
            };
            return Ok(V::Vm(Value::Boolean(result)));
        }
        let (Some(a), Some(b)) = (numeric(&a), numeric(&b)) else {
            return Err(format!("bad operand types for {op}"));
        };
        if matches!(op, "<<" | ">>" | ">>>") {
            let (Num::Int(n, long), Num::Int(by, _)) = (a, b) else {
                return Err(format!("bad operand types for {op}"));
            };
            let by = (by & if long { 63 } else { 31 }) as u32;
            return Ok(V::Vm(match (op, long) {
                ("<<", true) => int(n.wrapping_shl(by), true),
                ("<<", false) => int(i64::from((n as i32).wrapping_shl(by)), false),
                (">>", true) => int(n >> by, true),
                (">>", false) => int(i64::from((n as i32) >> by), false),
                (_, true) => int(((n as u64) >> by) as i64, true),
                (_, false) => int(i64::from(((n as i32 as u32) >> by) as i32), false),
            }));
        }
        let compare = |ordering: Option<std::cmp::Ordering>| -> Result<V, Failed> {
            use std::cmp::Ordering::*;
            let result = match (op, ordering) {
                (_, None) => op == "!=",
                ("==", Some(o)) => o == Equal,
                ("!=", Some(o)) => o != Equal,
                ("<", Some(o)) => o == Less,
                (">", Some(o)) => o == Greater,
                ("<=", Some(o)) => o != Greater,
                (">=", Some(o)) => o != Less,
                _ => unreachable!("a comparison"),
            };
            Ok(V::Vm(Value::Boolean(result)))
        };
        match (a, b) {
            (Num::Int(x, lx), Num::Int(y, ly)) => {
                let long = lx || ly;
                let (x, y) = match long {
                    true => (x, y),
                    false => (i64::from(x as i32), i64::from(y as i32)),
                };
                if matches!(op, "==" | "!=" | "<" | ">" | "<=" | ">=") {
                    return compare(Some(x.cmp(&y)));
                }
                if matches!(op, "/" | "%") && y == 0 {
                    return Err("java.lang.ArithmeticException: / by zero".into());
                }
                let n = match op {
                    "+" => x.wrapping_add(y),
                    "-" => x.wrapping_sub(y),
                    "*" => x.wrapping_mul(y),
                    "/" => x.wrapping_div(y),
                    "%" => x.wrapping_rem(y),
                    "&" => x & y,
                    "|" => x | y,
                    "^" => x ^ y,
                    _ => return Err(format!("bad operand types for {op}")),
                };
                Ok(V::Vm(int(n, long)))
            }
            (a, b) => {
                let double = matches!(a, Num::Float(_, true))
                    || matches!(b, Num::Float(_, true))
                    || !matches!((a, b), (Num::Float(..), _) | (_, Num::Float(..)));
                let (x, y) = (a.as_f64(), b.as_f64());
                if matches!(op, "==" | "!=" | "<" | ">" | "<=" | ">=") {
                    return compare(x.partial_cmp(&y));
                }
                let f = match op {
                    "+" => x + y,
                    "-" => x - y,
                    "*" => x * y,
                    "/" => x / y,
                    "%" => x % y,
                    _ => return Err(format!("bad operand types for {op}")),
                };
                Ok(V::Vm(float(f, double)))
            }
        }
    }

    /// The text a value adds to a string: `String.valueOf` (an object's `toString()`).
    fn text(&mut self, value: V) -> Result<String, Failed> {
        Ok(match value {
            V::Str(text) => text,
            V::Class(class) => format!("class {}", vm::class_name(&self.vm.signature(class))),
            V::Vm(Value::Object(_, 0)) => "null".into(),
            V::Vm(Value::Object(tag::STRING, id)) => {
                self.vm.string(id).map_err(|e| e.to_string())?
            }
            V::Vm(Value::Object(_, id)) => {
                let class = self.vm.type_of(id).map_err(|e| e.to_string())?;
                let (_, method) =
                    find_method(self.vm, class, "toString", 0).ok_or("no toString")?;
                let invoked = self.vm.invoke(self.frame.thread, id, class, method.id, &[]);
                self.frame.refresh(self.vm);
                match invoked.map_err(|e| e.to_string())? {
                    Invoked::Returned(Value::Object(_, s)) if s != 0 => {
                        self.vm.string(s).map_err(|e| e.to_string())?
                    }
                    Invoked::Returned(_) => "null".into(),
                    Invoked::Threw(_) => return Err("toString() threw".into()),
                }
            }
            V::Vm(Value::Boolean(b)) => b.to_string(),
            V::Vm(Value::Char(c)) => String::from_utf16_lossy(&[c]),
            V::Vm(Value::Double(f)) => java_double(f),
            V::Vm(Value::Float(f)) => java_double(f64::from(f)),
            V::Vm(value) => match numeric(&value) {
                Some(Num::Int(n, _)) => n.to_string(),
                _ => String::new(),
            },
        })
    }

    fn cast(&mut self, to: &str, value: V) -> Result<V, Failed> {
        if !PRIMITIVES.contains(&to) {
            // A reference cast: checked as Java would.
            if let V::Vm(Value::Object(_, id)) = &value {
                if *id != 0 {
                    if let Some(target) = self.class(to) {
                        let class = self.vm.type_of(*id).map_err(|e| e.to_string())?;
                        let signature = self.vm.signature(target);
                        if !self.vm.is_a(class, &signature) {
                            return Err(format!(
                                "java.lang.ClassCastException: class {} cannot be cast to class {}",
                                vm::class_name(&self.vm.signature(class)),
                                vm::class_name(&signature)
                            ));
                        }
                    }
                }
            }
            return Ok(value);
        }
        let value = self.primitive(value)?;
        if to == "boolean" {
            return match value {
                Value::Boolean(_) => Ok(V::Vm(value)),
                _ => Err("incompatible types: cannot cast to boolean".into()),
            };
        }
        let n = numeric(&value).ok_or("incompatible types: cannot cast a boolean")?;
        let (i, f) = match n {
            Num::Int(i, _) => (i, i as f64),
            // Java's float-to-integer casts saturate, as Rust's `as` does.
            Num::Float(f, _) => (f as i64, f),
        };
        let whole = |max: i64| match n {
            Num::Float(f, _) if max == i32::MAX as i64 => f as i32 as i64,
            _ => i,
        };
        Ok(V::Vm(match to {
            "int" => Value::Int(whole(i32::MAX as i64) as i32),
            "long" => Value::Long(i),
            "short" => Value::Short(whole(i32::MAX as i64) as i16),
            "byte" => Value::Byte(whole(i32::MAX as i64) as i8),
            "char" => Value::Char(whole(i32::MAX as i64) as u16),
            "float" => Value::Float(f as f32),
            _ => Value::Double(f),
        }))
    }
}

/// A number while computing: an integer (`long` or narrower) or a floating point (`double`
/// or `float`).
#[derive(Debug, Clone, Copy)]
enum Num {
    Int(i64, bool),
    Float(f64, bool),
}

impl Num {
    fn as_f64(self) -> f64 {
        match self {
            Num::Int(n, _) => n as f64,
            Num::Float(f, _) => f,
        }
    }
}

fn numeric(value: &Value) -> Option<Num> {
    Some(match *value {
        Value::Byte(n) => Num::Int(n.into(), false),
        Value::Short(n) => Num::Int(n.into(), false),
        Value::Char(n) => Num::Int(n.into(), false),
        Value::Int(n) => Num::Int(n.into(), false),
        Value::Long(n) => Num::Int(n, true),
        Value::Float(f) => Num::Float(f.into(), false),
        Value::Double(f) => Num::Float(f, true),
        _ => return None,
    })
}

fn int(n: i64, long: bool) -> Value {
    match long {
        true => Value::Long(n),
        false => Value::Int(n as i32),
    }
}

fn float(f: f64, double: bool) -> Value {
    match double {
        true => Value::Double(f),
        false => Value::Float(f as f32),
    }
}

/// A reference's identity, for `==`: objects by id, `null` as 0.
fn reference(value: &V) -> Option<Id> {
    match value {
        V::Vm(Value::Object(_, id)) => Some(*id),
        _ => None,
    }
}

fn tag_name(tag: u8) -> &'static str {
    match tag {
        tag::ARRAY => "array",
        tag::STRING => "String",
        tag::THREAD => "Thread",
        tag::CLASS_OBJECT => "Class",
        _ => "object",
    }
}

/// A double as `Double.toString` writes it, for the common cases: `2.0`, `0.1`, `1.0E10`.
fn java_double(f: f64) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "Infinity".into() } else { "-Infinity".into() };
    }
    let magnitude = f.abs();
    if magnitude != 0.0 && !(1e-3..1e7).contains(&magnitude) {
        let text = format!("{f:E}");
        return match text.split_once('E') {
            Some((mantissa, exponent)) if !mantissa.contains('.') => {
                format!("{mantissa}.0E{exponent}")
            }
            _ => text,
        };
    }
    let text = f.to_string();
    match text.contains('.') {
        true => text,
        false => format!("{text}.0"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_read_as_java_prints_them() {
        assert_eq!(java_double(2.0), "2.0");
        assert_eq!(java_double(0.1), "0.1");
        assert_eq!(java_double(1e10), "1.0E10");
        assert_eq!(java_double(-1.5e-5), "-1.5E-5");
    }
}
