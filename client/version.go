package client

// Version is this client's release, semantic versioning: gmq's CHANGELOG.md
// names each release and what a breaking one asks of its users. Every
// request carries it as its User-Agent, "gmq-client-go/" + Version.
const Version = "0.1.0"

// userAgent names this client and its release in every request.
const userAgent = "gmq-client-go/" + Version
