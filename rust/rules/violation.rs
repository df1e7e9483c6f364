//! Typed violations: what a rule reports, as fields, and the message templates that render
//! them.
//!
//! Each rule file declares its violation with [`violation!`](crate::violation): an enum with
//! one variant per form of the message, each with its template. The template is Rust's
//! `format!` string over the variant's fields, so the text in the rule's `MESSAGES` is, by
//! construction, the text that is rendered; `shape-lint rule CODE` lists them.
//!
//! ```ignore
//! violation! {
//!     /// SHP105
//!     pub enum DimOutOfRange for RULE {
//!         Dim { op, dim, rank, shape } => "{op}: dim {dim} is out of range for a {rank}-D tensor {shape}",
//!     }
//! }
//! ```

use super::Rule;

/// A reported violation of one rule.
pub trait Violation {
    /// The rule it violates.
    const RULE: &'static Rule;
    /// Every message template of the rule, in declaration order.
    const MESSAGES: &'static [&'static str];
    /// The template this violation renders.
    fn template(&self) -> &'static str;
    /// The rendered message.
    fn message(&self) -> String;
}

/// Declare a rule's violation enum: `Variant { field, ... } => "template with {field}"`.
/// Fields are `String`s (shapes, dims and names as messages show them).
#[macro_export]
macro_rules! violation {
    (
        $(#[$meta:meta])*
        pub enum $name:ident for $rule:path {
            $( $(#[$vmeta:meta])* $variant:ident { $($field:ident),* $(,)? } => $template:literal ),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, Eq)]
        pub enum $name {
            $( $(#[$vmeta])* $variant { $($field: String),* } ),+
        }

        impl $crate::rules::violation::Violation for $name {
            const RULE: &'static $crate::rules::Rule = &$rule;
            const MESSAGES: &'static [&'static str] = &[$($template),+];

            fn template(&self) -> &'static str {
                match self {
                    $( $name::$variant { .. } => $template ),+
                }
            }

            #[allow(unused_variables)]
            fn message(&self) -> String {
                match self {
                    $( $name::$variant { $($field),* } => format!($template) ),+
                }
            }
        }
    };
}

#[cfg(test)]
mod tests {
    use super::Violation;
    use crate::rules::meta::internal_error::RULE;

    crate::violation! {
        /// A test violation.
        pub enum Demo for RULE {
            One { op, dim } => "{op}: dim {dim} is out of range",
            Two { what } => "{what} is wrong",
        }
    }

    #[test]
    fn the_template_is_what_renders() {
        let v = Demo::One { op: "torch.cat".into(), dim: "3".into() };
        assert_eq!(v.message(), "torch.cat: dim 3 is out of range");
        assert_eq!(v.template(), "{op}: dim {dim} is out of range");
        assert_eq!(Demo::MESSAGES, ["{op}: dim {dim} is out of range", "{what} is wrong"]);
        assert_eq!(Demo::Two { what: "x".into() }.message(), "x is wrong");
        assert_eq!(Demo::RULE.code, "SHP001");
    }
}
