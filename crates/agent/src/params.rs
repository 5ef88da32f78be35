//! `executorParams` as the words of a `run` command line. Split here the way a shell would split
//! a simple line (spaces, single and double quotes, backslash), but no shell ever sees it: no
//! variables, no globs, no command substitution — the words go straight to the flag parser.

/// Splits `text` into words; an unclosed quote is a one-line error.
pub fn split(text: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => words.extend(word.take()),
            '\'' => quoted(&mut chars, '\'', word.get_or_insert_with(String::new))?,
            '"' => quoted(&mut chars, '"', word.get_or_insert_with(String::new))?,
            '\\' => word.get_or_insert_with(String::new).extend(chars.next()),
            c => word.get_or_insert_with(String::new).push(c),
        }
    }
    words.extend(word);
    Ok(words)
}

fn quoted(chars: &mut std::str::Chars<'_>, quote: char, word: &mut String) -> Result<(), String> {
    while let Some(c) = chars.next() {
        match c {
            c if c == quote => return Ok(()),
            '\\' if quote == '"' => word.extend(chars.next()),
            c => word.push(c),
        }
    }
    Err(format!(
        "executorParams: a {quote} quote is not closed; close it or remove it"
    ))
}

#[cfg(test)]
mod tests {
    use super::split;

    #[test]
    fn splits_like_a_simple_shell_line_without_expanding_anything() {
        assert_eq!(
            split(r#" http://h/ -c 4  -H 'Host: a b' --body "x\"y" $HOME a\ b ''"#).unwrap(),
            [
                "http://h/",
                "-c",
                "4",
                "-H",
                "Host: a b",
                "--body",
                "x\"y",
                "$HOME",
                "a b",
                ""
            ]
        );
        assert!(split("-H 'open").unwrap_err().contains("not closed"));
        assert!(split("").unwrap().is_empty());
    }
}
