// Command gencontract writes lua/contract.lua from lua/contract.go's tables
// (and its reply constructors from lua/shapes.go's), and pool's reply
// decoders, and their table by name for pool's tests, from lua/shapes.go's
// (go generate ./lua runs it in lua/).
package main

import (
	"log"
	"os"

	"github.com/gmq/gmq/lua"
)

func main() {
	if err := os.WriteFile(lua.ContractFile, []byte(lua.ContractLua()), 0o644); err != nil {
		log.Fatalf("gencontract: %v", err)
	}
	decoders, err := lua.ReplyDecoders()
	if err != nil {
		log.Fatalf("gencontract: %v", err)
	}
	if err := os.WriteFile(lua.DecodersFile, []byte(decoders), 0o644); err != nil {
		log.Fatalf("gencontract: %v", err)
	}
	table, err := lua.ReplyDecoderTable()
	if err != nil {
		log.Fatalf("gencontract: %v", err)
	}
	if err := os.WriteFile(lua.DecoderTableFile, []byte(table), 0o644); err != nil {
		log.Fatalf("gencontract: %v", err)
	}
}
