//! `--label k=v` and the git commit and branch a result is filed under.

use std::collections::BTreeMap;
use std::process::Command;

/// Labels of a run (`--label k=v`, repeatable), also the filters of `history` and
/// `compare --against-history`. Keys are unique; a later `k=` replaces an earlier one.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Labels(pub BTreeMap<String, String>);

/// A `--label` that is not `key=value`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("--label '{0}' is not key=value: give a key of letters, digits, '_', '-' or '.', then '=', then the value, e.g. --label branch=main")]
pub struct LabelError(pub String);

impl Labels {
    /// One `key=value`: the key is 1–64 letters, digits, `_`, `-` or `.`; the value any text
    /// without a line break (it may be empty).
    pub fn parse_one(text: &str) -> Result<(String, String), LabelError> {
        let bad = || LabelError(text.to_string());
        let (k, v) = text.split_once('=').ok_or_else(bad)?;
        let key_ok = !k.is_empty()
            && k.len() <= 64
            && k.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
        if !key_ok || v.contains(['\n', '\r']) {
            return Err(bad());
        }
        Ok((k.to_string(), v.to_string()))
    }

    /// Labels from `key=value` pairs, later keys replacing earlier ones.
    pub fn from_pairs(pairs: impl IntoIterator<Item = (String, String)>) -> Labels {
        Labels(pairs.into_iter().collect())
    }

    /// The labels a run is filed under: `branch` and `commit` from git (when known) under
    /// these, which win (a CI checkout is often a detached HEAD: `--label branch=main`).
    pub fn with_git(&self, git: &Git) -> Labels {
        let mut all = BTreeMap::new();
        if let Some(b) = &git.branch {
            all.insert("branch".to_string(), b.clone());
        }
        if let Some(c) = &git.commit {
            all.insert("commit".to_string(), c.clone());
        }
        all.extend(self.0.clone());
        Labels(all)
    }

    /// `k=v,k2=v2`, for tables.
    pub fn joined(&self) -> String {
        let pairs: Vec<String> = self.0.iter().map(|(k, v)| format!("{k}={v}")).collect();
        pairs.join(",")
    }
}

/// The git commit and branch of a directory; both `None` outside a repository or without git.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Git {
    /// `git rev-parse HEAD`.
    pub commit: Option<String>,
    /// `git rev-parse --abbrev-ref HEAD`; `None` on a detached HEAD.
    pub branch: Option<String>,
}

impl Git {
    /// Asks `git` about the current directory. No git, no repository, no commit yet: `None`s,
    /// never an error.
    pub fn of_current_dir() -> Git {
        let ask = |args: &[&str]| -> Option<String> {
            let out = Command::new("git")
                .args(args)
                .stdin(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .output()
                .ok()?;
            let text = String::from_utf8(out.stdout).ok()?.trim().to_string();
            (out.status.success() && !text.is_empty()).then_some(text)
        };
        let commit = ask(&["rev-parse", "--verify", "-q", "HEAD"]);
        let branch = commit
            .as_ref()
            .and_then(|_| ask(&["rev-parse", "--abbrev-ref", "HEAD"]))
            .filter(|b| b != "HEAD");
        Git { commit, branch }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_key_equals_value() {
        assert_eq!(
            Labels::parse_one("branch=main").unwrap(),
            ("branch".into(), "main".into())
        );
        assert_eq!(
            Labels::parse_one("env=a=b").unwrap(),
            ("env".into(), "a=b".into())
        );
        assert_eq!(Labels::parse_one("k=").unwrap(), ("k".into(), "".into()));
        for bad in ["", "=v", "novalue", "a b=c", "k=x\ny"] {
            let e = Labels::parse_one(bad).unwrap_err().to_string();
            assert!(e.starts_with("--label '"), "{e}");
        }
    }

    #[test]
    fn given_labels_win_over_git() {
        let git = Git {
            commit: Some("abc".into()),
            branch: None,
        };
        let given = Labels::from_pairs([("branch".into(), "main".into())]);
        let all = given.with_git(&git);
        assert_eq!(all.joined(), "branch=main,commit=abc");
        let git = Git {
            commit: Some("abc".into()),
            branch: Some("feature".into()),
        };
        assert_eq!(
            Labels::default().with_git(&git).joined(),
            "branch=feature,commit=abc"
        );
        assert_eq!(given.with_git(&git).0["branch"], "main");
    }
}
