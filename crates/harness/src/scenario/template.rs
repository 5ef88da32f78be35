//! Placeholders in templates, args, env values, URLs and ready checks: which names exist, their
//! values for one target of one run, and rendering text with them (`{{`/`}}` are literal braces).

use super::{Scenario, TargetSpec};
use std::collections::HashMap;
use std::path::Path;

/// Placeholders that templates, args, env values, URLs and ready checks may use; besides these,
/// `{port:NAME}` is the port of the target called NAME (for load balancers with several backends).
pub const PLACEHOLDERS: [&str; 5] = ["port", "upstream", "dir", "name", "scenario_dir"];

/// Prefix of the placeholder naming another target's port: `{port:backend-2}`.
pub const PORT_OF: &str = "port:";

/// A placeholder problem in a template.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{problem} on line {line}")]
pub struct TemplateError {
    /// Line of the template, from 1.
    pub line: usize,
    /// What is wrong, e.g. an unknown placeholder.
    pub problem: String,
}

impl Scenario {
    /// Placeholder values for target `t`, given the ports of this run and its directory.
    pub fn placeholders(
        &self,
        t: &TargetSpec,
        ports: &HashMap<String, u16>,
        dir: &Path,
    ) -> HashMap<String, String> {
        let mut map = HashMap::new();
        map.insert("name".into(), t.name.clone());
        map.insert("dir".into(), dir.display().to_string());
        map.insert("scenario_dir".into(), self.dir.display().to_string());
        if let Some(p) = ports.get(&t.name) {
            map.insert("port".into(), p.to_string());
        }
        if let Some(p) = t.proxy_to.as_ref().and_then(|u| ports.get(u)) {
            map.insert("upstream".into(), format!("127.0.0.1:{p}"));
        }
        for (name, p) in ports {
            map.insert(format!("{PORT_OF}{name}"), p.to_string());
        }
        map
    }
}

/// Replaces `{name}` placeholders by their values; `{{` and `}}` stand for `{` and `}`. Braces that
/// do not enclose a placeholder name (`events { ... }`) are kept, so config files read naturally.
pub fn render_template(
    text: &str,
    values: &HashMap<String, String>,
) -> Result<String, TemplateError> {
    scan(text, |name| values.get(name).cloned())
}

/// The placeholder names a text uses; an error for names that are not in [`PLACEHOLDERS`].
pub fn placeholders_in(text: &str) -> Result<Vec<String>, TemplateError> {
    let mut used = Vec::new();
    scan(text, |name| {
        used.push(name.to_string());
        let known = PLACEHOLDERS.contains(&name) || name.strip_prefix(PORT_OF).is_some();
        known.then(String::new)
    })?;
    Ok(used)
}

fn scan(
    text: &str,
    mut value: impl FnMut(&str) -> Option<String>,
) -> Result<String, TemplateError> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find(['{', '}']) {
        out.push_str(&rest[..i]);
        let tail = &rest[i..];
        if tail.starts_with("{{") || tail.starts_with("}}") {
            out.push_str(&tail[..1]);
            rest = &tail[2..];
        } else if let Some(name) = placeholder_name(tail) {
            let line = text[..text.len() - tail.len()].matches('\n').count() + 1;
            let v = value(name).ok_or_else(|| TemplateError {
                line,
                problem: format!("unknown or unset placeholder {{{name}}}"),
            })?;
            out.push_str(&v);
            rest = &tail[name.len() + 2..];
        } else {
            out.push_str(&tail[..1]);
            rest = &tail[1..];
        }
    }
    out.push_str(rest);
    Ok(out)
}

/// `name` if `tail` starts with `{name}` and name is lowercase letters, digits or `_`, or
/// `port:` followed by a target name (letters, digits, `_`, `-`, `.`).
fn placeholder_name(tail: &str) -> Option<&str> {
    let body = tail.strip_prefix('{')?;
    let end = body.find('}')?;
    let name = &body[..end];
    let ok = match name.strip_prefix(PORT_OF) {
        Some(target) => {
            !target.is_empty()
                && target
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c))
        }
        None => {
            !name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        }
    };
    ok.then_some(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn template_substitutes_and_escapes() {
        let values = HashMap::from([
            ("port".to_string(), "8080".to_string()),
            ("name".to_string(), "n".to_string()),
        ]);
        let out = render_template("{{port}} {port} {name} { x } }}{{ {}", &values).unwrap();
        assert_eq!(out, "{port} 8080 n { x } }{ {}");
    }

    #[test]
    fn template_reports_unknown_placeholder_with_line() {
        let e = render_template("a\n{dir}", &HashMap::new()).unwrap_err();
        assert_eq!(e.line, 2);
        assert!(e.to_string().contains("{dir}"));
        assert_eq!(
            placeholders_in("{port}{{x}}{upstream}").unwrap(),
            ["port", "upstream"]
        );
        assert!(placeholders_in("{nope}").is_err());
    }
}
