package seed_test
import ("testing";"context";"os";"strconv";"time";"gorm.io/gorm";"github.com/syncdesk/syncdesk/models/dbtest";"github.com/syncdesk/syncdesk/sync/seed")
func TestZZScale(t *testing.T){ n,_:=strconv.Atoi(os.Getenv("ZZN")); if n==0 {t.Skip()}
 for _,open:=range []func(testing.TB) *gorm.DB{dbtest.SQLite, dbtest.Postgres}{
 db:=open(t); start:=time.Now()
 if err:=seed.Fill(context.Background(),db,seed.Options{Links:n,Attempts:5*n,Now:now});err!=nil{t.Fatal(err)}
 t.Logf("%s %d links: %v", db.Dialector.Name(), n, time.Since(start))}
}
