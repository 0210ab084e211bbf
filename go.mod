module github.com/smg-go/smg

go 1.26.8
