package web

import "github.com/switchboard-dev/switchboard/web/internal/hub"

// Hub fans live updates out to every open browser tab (see package hub);
// the events it carries are named in views (views.RowEvent, …).
type Hub = hub.Hub
