//! The commented scenario `stormrig new` writes: a working storm (a 503 window, three
//! presets and one custom config) that a user edits rather than a blank page, with the
//! other choices one comment away. It is kept a real file (`template.toml`) so the tests
//! load it as the loader would any scenario.

/// The template's text with `name` as the scenario's name (and in its first comment).
pub fn text(name: &str) -> String {
    include_str!("template.toml").replace("NAME", name)
}

/// A scenario name made from a file stem: every character a report folder name may not
/// hold becomes `-`, and an empty stem is `storm`.
pub fn name_from_stem(stem: &str) -> String {
    let name: String = stem
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '-'
            }
        })
        .take(super::limits::MAX_NAME_LEN)
        .collect();
    if name.is_empty() || name == "." || name == ".." {
        "storm".into()
    } else {
        name
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_from_stems_are_folder_safe() {
        assert_eq!(name_from_stem("payments storm"), "payments-storm");
        assert_eq!(name_from_stem("a.b_c-1"), "a.b_c-1");
        assert_eq!(name_from_stem(""), "storm");
        assert_eq!(name_from_stem(".."), "storm");
        assert!(
            crate::scenario::validate::refuse::check_name("name", &name_from_stem("é ü")).is_ok()
        );
    }

    #[test]
    fn the_template_names_its_scenario() {
        let t = text("payments");
        assert!(t.contains("name = \"payments\""), "{t}");
        assert!(!t.contains("NAME"), "{t}");
    }
}
