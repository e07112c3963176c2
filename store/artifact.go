package store

// ApplyArtifact records on s that artifact ran under its launch (see
// Verifications.RecordArtifact): changed is whether s changed; held
// whether the artifact is another than the one recorded.
func ApplyArtifact(s *Server, artifact string) (changed, held bool) {
	f := s.From
	switch {
	case f == nil || artifact == "" || f.Artifact == artifact && f.Held == "":
		return false, false
	case f.Artifact == "":
		from := *f
		from.Artifact = artifact
		s.From = &from
		return true, false
	case f.Held != "":
		// Held stays held, whatever runs next (the recorded one again
		// too): a person confirms the launch, seeing what ran.
		if f.Held == artifact || f.Artifact == artifact {
			return false, true
		}
	}
	from := *f
	from.Held = artifact
	s.From = &from
	return true, true
}
