//! A one-line text input: what Setup's Model and Dataset fields open on Enter and what Save as
//! preset asks its name with. State only: the app holds it (`App::prompt`), `update` routes the
//! keys to it (`Prompt::key`), the screens draw it (`TextInput::spans`).

use std::path::PathBuf;

use crate::tui::key::Key;

/// The text and the cursor (a character index, 0..=the text's length).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TextInput {
    pub text: String,
    pub cursor: usize,
}

/// What a key did to a text input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Edit {
    /// The text or the cursor moved (or nothing: a key the input ignores).
    Editing,
    /// Enter: the text is given.
    Accept,
    /// Esc: nothing is given.
    Cancel,
}

impl TextInput {
    /// `text` with the cursor at its end.
    pub fn new(text: &str) -> Self {
        TextInput {
            text: text.to_string(),
            cursor: text.chars().count(),
        }
    }

    fn len(&self) -> usize {
        self.text.chars().count()
    }

    /// The byte offset of character `i`.
    fn byte(&self, i: usize) -> usize {
        self.text
            .char_indices()
            .nth(i)
            .map_or(self.text.len(), |(b, _)| b)
    }

    /// Applies one key: printable characters insert at the cursor, ← → Home End move it,
    /// Backspace and Delete remove the character before / under it, Enter accepts, Esc cancels.
    pub fn key(&mut self, k: Key) -> Edit {
        let n = self.len();
        self.cursor = self.cursor.min(n);
        match k {
            Key::Enter => return Edit::Accept,
            Key::Esc => return Edit::Cancel,
            Key::Char(c) if !c.is_control() => {
                let at = self.byte(self.cursor);
                self.text.insert(at, c);
                self.cursor += 1;
            }
            Key::Space => {
                let at = self.byte(self.cursor);
                self.text.insert(at, ' ');
                self.cursor += 1;
            }
            Key::Backspace if self.cursor > 0 => {
                let at = self.byte(self.cursor - 1);
                self.text.remove(at);
                self.cursor -= 1;
            }
            Key::Delete if self.cursor < n => {
                let at = self.byte(self.cursor);
                self.text.remove(at);
            }
            Key::Left => self.cursor = self.cursor.saturating_sub(1),
            Key::Right => self.cursor = (self.cursor + 1).min(n),
            Key::Home => self.cursor = 0,
            Key::End => self.cursor = n,
            _ => {}
        }
        Edit::Editing
    }

    /// The text split at the cursor, as (before, under, after): the screen draws `under`
    /// reversed (a space past the end).
    pub fn parts(&self) -> (String, String, String) {
        let before: String = self.text.chars().take(self.cursor).collect();
        let under: String = self
            .text
            .chars()
            .nth(self.cursor)
            .map_or(" ".into(), |c| c.to_string());
        let after: String = self.text.chars().skip(self.cursor + 1).collect();
        (before, under, after)
    }
}

/// What an open text input gives its text to.
#[derive(Clone, Debug, PartialEq)]
pub enum PromptFor {
    /// Setup's Model field: `kind:key=value,…`.
    Model,
    /// Setup's Dataset field: `NAME|PATH[:key=value,…]`.
    Dataset,
    /// Save as preset: the name of the study Setup shows.
    SaveSetup,
    /// Save as preset: the name of the calibrated study Live shows (its run log, if any).
    SaveCalibrated(Option<PathBuf>),
}

/// An open text input and what it is for; `error` is why the last Enter was refused (the text
/// stays open to be corrected).
#[derive(Clone, Debug, PartialEq)]
pub struct Prompt {
    pub for_: PromptFor,
    pub input: TextInput,
    pub error: Option<String>,
}

impl Prompt {
    pub fn new(for_: PromptFor, text: &str) -> Self {
        Prompt {
            for_,
            input: TextInput::new(text),
            error: None,
        }
    }

    /// What the input asks for, in words (the screens' label).
    pub fn label(&self) -> &'static str {
        match self.for_ {
            PromptFor::Model => "model",
            PromptFor::Dataset => "dataset",
            PromptFor::SaveSetup | PromptFor::SaveCalibrated(_) => "save as preset",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn typed(t: &mut TextInput, s: &str) {
        for c in s.chars() {
            assert_eq!(t.key(Key::Char(c)), Edit::Editing);
        }
    }

    #[test]
    fn it_inserts_moves_and_deletes_at_the_cursor() {
        let mut t = TextInput::new("mlp:hidden=[64]");
        assert_eq!(t.cursor, 15);
        t.key(Key::Left);
        t.key(Key::Backspace);
        t.key(Key::Backspace);
        typed(&mut t, "128");
        assert_eq!(t.text, "mlp:hidden=[128]");
        t.key(Key::Home);
        t.key(Key::Delete);
        typed(&mut t, "M");
        assert_eq!(t.text, "Mlp:hidden=[128]");
        assert_eq!(t.cursor, 1);
        t.key(Key::End);
        t.key(Key::Right);
        assert_eq!(t.cursor, 16);
        t.key(Key::Space);
        assert_eq!(
            t.parts(),
            ("Mlp:hidden=[128] ".into(), " ".into(), "".into())
        );
        assert_eq!(t.key(Key::Enter), Edit::Accept);
        assert_eq!(t.key(Key::Esc), Edit::Cancel);
    }

    #[test]
    fn it_counts_characters_not_bytes() {
        let mut t = TextInput::new("η=0.1");
        t.key(Key::Home);
        t.key(Key::Right);
        assert_eq!(t.parts(), ("η".into(), "=".into(), "0.1".into()));
        t.key(Key::Backspace);
        assert_eq!(t.text, "=0.1");
        t.key(Key::Backspace);
        assert_eq!((t.text.as_str(), t.cursor), ("=0.1", 0));
    }
}
