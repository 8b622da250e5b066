module github.com/gmq/gmq/client

go 1.26
